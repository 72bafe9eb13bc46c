"""`dra-migrate serve` after its checks: gevent patches this interpreter before any other import.

webhook/cli.py `serve_command` checks the arguments and files, then execs
`python -m dra_migrate.webhook.launch <serve arguments>`: the same process id, a fresh
interpreter in which the socket and ssl modules are cooperative before ssl, urllib3 or the
Kubernetes client load (see webhook/worker.py for why the server runs on gevent).
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after the patch on purpose
import sys  # noqa: E402

from dra_migrate.subcommands import Subcommands  # noqa: E402
from dra_migrate.webhook.cli import register, run_server  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="dra-migrate")
    register(Subcommands.of(parser, dest="command", required=True))
    return run_server(parser.parse_args(["serve", *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
