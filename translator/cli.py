"""`dra-migrate` command line: one entry point, one subcommand module per product part.

Each part registers its own subcommands, so the translator, the webhook server and the
certificate tool stay independent and the webhook's heavy imports load only for `serve`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import translator.commands as translator_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-migrate",
        description="Move device-plugin workloads to Kubernetes Dynamic Resource Allocation.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    translator_commands.register(subparsers)
    import certs.cli as certs_cli
    import webhook.cli as webhook_cli

    webhook_cli.register(subparsers)
    certs_cli.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = args.handler
    try:
        code: int = handler(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
