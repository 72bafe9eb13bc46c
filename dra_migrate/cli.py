"""`dra-migrate`: one entry point above the parts; each part registers and owns its subcommands.

The parts' CLI modules import only argparse and the standard library at module level, so
building the parser is cheap and the heavy imports load only for the command that needs them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dra_migrate.certs import cli as certs_cli
from dra_migrate.exits import EXIT_INTERRUPTED
from dra_migrate.translator import cli as translator_cli
from dra_migrate.webhook import cli as webhook_cli


class _Version(argparse.Action):
    """--version, reading the installed version only when asked (importlib.metadata is slow to load)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import dra_migrate

        sys.stdout.write(f"dra-migrate {dra_migrate.__version__}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-migrate",
        description="Move device-plugin workloads to Kubernetes Dynamic Resource Allocation.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    translator_cli.register(subparsers)
    webhook_cli.register(subparsers)
    certs_cli.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


if __name__ == "__main__":
    sys.exit(main())
