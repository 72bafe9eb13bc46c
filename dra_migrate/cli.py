# PYTHON_ARGCOMPLETE_OK
"""`dra-migrate`: one entry point above the parts; each part registers and owns its subcommands.

Installed twice: as `dra-migrate` and as `kubectl-dra_migrate`, which kubectl runs for
`kubectl dra-migrate ...` (kubectl plugins are executables named kubectl-<name>, `_` for `-`).

The parts' CLI modules import only argparse and the standard library at module level, so
building the parser is cheap and the heavy imports load only for the command that needs them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dra_migrate.argocd import cli as argocd_cli
from dra_migrate.certs import cli as certs_cli
from dra_migrate.exits import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED
from dra_migrate.planning import cli as planning_cli
from dra_migrate.subcommands import Subcommands
from dra_migrate.translator import cli as translator_cli
from dra_migrate.webhook import cli as webhook_cli


def _program_name() -> str:
    invoked = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "kubectl dra-migrate" if invoked.startswith("kubectl-") else "dra-migrate"


class _Version(argparse.Action):
    """--version, reading the installed version only when asked (importlib.metadata is slow to load)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import dra_migrate

        sys.stdout.write(f"dra-migrate {dra_migrate.__version__}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_program_name(),
        description="Move device-plugin workloads to Kubernetes Dynamic Resource Allocation.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    subcommands = Subcommands.of(parser, dest="command", required=True, metavar="COMMAND")
    translator_cli.register(subcommands)
    planning_cli.register(subcommands)
    webhook_cli.register(subcommands)
    certs_cli.register(subcommands)
    argocd_cli.register(subcommands)
    if "_ARGCOMPLETE" in os.environ:  # completion reads every subcommand's arguments
        subcommands.complete()
    return parser


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion (`eval "$(register-python-argcomplete dra-migrate)"`); loaded only when asked."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)


def _quiet_broken_pipe() -> int:
    """`dra-migrate ... | head`: the reader left. Stop quietly, as Unix tools do on SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    _complete(parser)
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _quiet_broken_pipe()
    return code


if __name__ == "__main__":
    sys.exit(main())
