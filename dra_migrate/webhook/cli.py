"""Subcommands of the webhook: `dra-migrate serve` and `dra-migrate webhook match-conditions`.

Only argparse and the standard library at module level: every `dra-migrate` run builds
these parsers, and flask, gunicorn and the kubernetes client load only for `serve`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dra_migrate.exits import fail

LOG_LEVELS = ("debug", "info", "warning", "error")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the admission webhook (HTTPS)",
        description=(
            "Serve the mutating admission webhook over TLS: POST /mutate, GET /healthz, /readyz, /metrics. "
            "Without --config the built-in mappings and the default policy apply."
        ),
    )
    serve.add_argument("--config", type=Path, metavar="FILE", help="configuration YAML (mappings + webhook policy)")
    serve.add_argument("--cert", type=Path, required=True, metavar="FILE", help="TLS certificate (PEM); hot-reloaded")
    serve.add_argument("--key", type=Path, required=True, metavar="FILE", help="TLS private key (PEM); hot-reloaded")
    serve.add_argument("--port", type=_port, default=8443, help="default: 8443")
    serve.add_argument("--host", default="0.0.0.0", help="address to bind (default: 0.0.0.0)")
    serve.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="kubeconfig for local runs (default: KUBECONFIG, in-cluster service account, ~/.kube/config)",
    )
    serve.add_argument("--workers", type=_positive, default=2, help="worker processes (default: 2)")
    serve.add_argument("--threads", type=_positive, default=4, help="threads per worker (default: 4)")
    serve.add_argument("--log-level", choices=LOG_LEVELS, default="info")
    serve.add_argument("--access-log", action="store_true", help="log every request to stderr")
    serve.add_argument(
        "--noop-route",
        action="store_true",
        help="also serve POST /mutate-noop, which always allows (a baseline for benchmarks)",
    )
    serve.set_defaults(handler=serve_command)

    webhook = subparsers.add_parser("webhook", help="admission webhook helpers")
    actions = webhook.add_subparsers(dest="webhook_command", required=True, metavar="ACTION")
    conditions = actions.add_parser(
        "match-conditions",
        help="print the MutatingWebhookConfiguration matchConditions for a configuration",
        description="Print, as a YAML list, the CEL matchConditions that send only relevant Pods to the webhook.",
    )
    conditions.add_argument("--config", type=Path, metavar="FILE", help="configuration YAML (default: built-in)")
    conditions.set_defaults(handler=match_conditions_command)


def match_conditions_command(args: argparse.Namespace) -> int:
    from dra_migrate.configfile import load_config
    from dra_migrate.engine import ConfigError
    from dra_migrate.webhook.match_conditions import match_conditions, to_yaml

    try:
        config = load_config(str(args.config) if args.config else None)
    except ConfigError as exc:
        return fail("webhook match-conditions", f"invalid configuration: {exc}")
    sys.stdout.write(to_yaml(match_conditions(config)))
    return 0


def serve_command(args: argparse.Namespace) -> int:
    from dra_migrate.certs.reload import ReloadingTLSContext, TLSLoadError
    from dra_migrate.configfile import load_settings
    from dra_migrate.engine import ConfigError

    try:
        settings = load_settings(str(args.config) if args.config else None)
    except ConfigError as exc:
        return fail("serve", f"invalid configuration: {exc}")
    try:
        ReloadingTLSContext(args.cert, args.key)  # fail now, not on the first handshake
    except TLSLoadError as exc:
        return fail("serve", f"cannot use the TLS certificate: {exc}")

    from dra_migrate.webhook.kube_client import KubeConfigError, load_configuration

    try:
        kube = load_configuration(args.kubeconfig)
    except KubeConfigError as exc:
        return fail("serve", str(exc))

    import logging
    import shutil
    import tempfile

    logging.basicConfig(
        level=args.log_level.upper(),
        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s",
    )
    if settings.config.target.notice:  # a target newer than the release table: said once, at start
        logging.getLogger("dra_migrate.webhook").warning("%s", settings.config.target.notice)
    # Must be set before prometheus_client is imported (it picks its value class then).
    metrics_dir = tempfile.mkdtemp(prefix="dra-migrate-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        from dra_migrate.webhook.server import ServeOptions, run

        options = ServeOptions(
            cert=args.cert,
            key=args.key,
            port=args.port,
            host=args.host,
            workers=args.workers,
            threads=args.threads,
            noop_route=args.noop_route,
            log_level=args.log_level,
            access_log=args.access_log,
        )
        return run(options, settings, kube)
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _port(value: str) -> int:
    number = _positive(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number")
    return number


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive integer")
    return number
