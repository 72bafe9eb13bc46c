"""`python -m webhook serve ...`: the webhook's subcommands without the rest of the CLI."""

from __future__ import annotations

import argparse
import sys

from webhook import cli


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cli.register(subparsers)
    args = parser.parse_args()
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
