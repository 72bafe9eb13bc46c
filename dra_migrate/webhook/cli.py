"""Subcommands of the webhook: `dra-migrate serve` and `dra-migrate webhook match-conditions`.

Only argparse and the standard library at module level: every `dra-migrate` run builds
these parsers, and flask, gunicorn and the kubernetes client load only for `serve`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dra_migrate.exits import fail

if TYPE_CHECKING:
    from kubernetes.client import Configuration

    from dra_migrate.configfile import Settings
    from dra_migrate.subcommands import Subcommands

LOG_LEVELS = ("debug", "info", "warning", "error")
DEPRECATED = {
    "cacheSeconds": "no effect, the server's copies of the cluster follow a watch; remove it",
    "extendedResourceClasses": "use the top-level `strategy` (auto, claims or extendedResource), which the webhook "
    "applies with the cluster's DeviceClasses; `skip` still leaves every served name to the scheduler, `warn` "
    "does nothing",
}


def register(subcommands: Subcommands) -> None:
    subcommands.add_command(
        "serve",
        _serve_arguments,
        help="run the admission webhook (HTTPS)",
        description=(
            "Serve the mutating admission webhook over TLS: POST /mutate, GET /healthz, /readyz, /metrics. "
            "Without --config the built-in mappings and the default policy apply."
        ),
    )
    subcommands.add_command("webhook", _webhook_arguments, help="admission webhook helpers")


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--config", type=Path, metavar="FILE", help="configuration YAML (mappings + webhook policy)")
    serve.add_argument("--cert", type=Path, required=True, metavar="FILE", help="TLS certificate (PEM); hot-reloaded")
    serve.add_argument("--key", type=Path, required=True, metavar="FILE", help="TLS private key (PEM); hot-reloaded")
    serve.add_argument(
        "--client-ca",
        type=Path,
        metavar="FILE",
        help="CA bundle (PEM) for client certificates: reviews (POST /mutate) then need a certificate it signed, "
        "as kube-apiserver presents through its AdmissionConfiguration kubeconfig; probes and /metrics stay open",
    )
    serve.add_argument("--port", type=_port, default=8443, help="default: 8443")
    serve.add_argument("--host", default="0.0.0.0", help="address to bind (default: 0.0.0.0)")
    serve.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="kubeconfig for local runs (default: KUBECONFIG, in-cluster service account, ~/.kube/config)",
    )
    serve.add_argument("--workers", type=_positive, default=2, help="worker processes (default: 2)")
    serve.add_argument("--log-level", choices=LOG_LEVELS, default="info")
    serve.add_argument("--access-log", action="store_true", help="log every request to stderr")
    serve.add_argument(
        "--noop-route",
        action="store_true",
        help="also serve POST /mutate-noop, which always allows (a baseline for benchmarks)",
    )
    serve.set_defaults(handler=serve_command)


def _webhook_arguments(webhook: argparse.ArgumentParser) -> None:
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
    """Check the configuration, certificate and API access here, then serve from a fresh
    interpreter (webhook/launch.py) that gevent patches before anything else is imported:
    ssl, urllib3 and the Kubernetes client imported unpatched would block a whole worker
    process on each API call (and urllib3 breaks when ssl is patched under it)."""
    prepared = _prepare(args)
    if isinstance(prepared, int):
        return prepared
    from dra_migrate.webhook.kube_client import remove_credential_files

    remove_credential_files()  # the served process loads the configuration again
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "dra_migrate.webhook.launch", *_serve_argv(args)])


def run_server(args: argparse.Namespace) -> int:
    """`serve` in the patched interpreter (webhook/launch.py)."""
    import logging
    import shutil
    import tempfile

    _raise_open_files_limit()
    prepared = _prepare(args)
    if isinstance(prepared, int):
        return prepared
    settings, kube = prepared
    logging.basicConfig(
        level=args.log_level.upper(),
        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s",
    )
    if settings.config.target.notice:  # a target newer than the release table: said once, at start
        logging.getLogger("dra_migrate.webhook").warning("%s", settings.config.target.notice)
    from dra_migrate.webhook.policy import WEBHOOK_SECTION

    for key in settings.get(WEBHOOK_SECTION).deprecated:
        logging.getLogger("dra_migrate.webhook").warning("webhook.%s is deprecated: %s", key, DEPRECATED[key])
    # Must be set before prometheus_client is imported (it picks its value class then).
    _remove_abandoned_directories(Path(tempfile.gettempdir()))
    metrics_dir = tempfile.mkdtemp(prefix=PRIVATE_DIRECTORY_PREFIX)
    (Path(metrics_dir) / MASTER_PID_FILE).write_text(str(os.getpid()))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    master = os.getpid()  # gunicorn forks the workers inside run(): they leave through here too
    try:
        from dra_migrate.webhook.server import ServeOptions, run

        options = ServeOptions(
            cert=args.cert,
            key=args.key,
            port=args.port,
            host=args.host,
            workers=args.workers,
            noop_route=args.noop_route,
            log_level=args.log_level,
            access_log=args.access_log,
            client_ca=args.client_ca,
        )
        return run(options, settings, kube)
    finally:
        if os.getpid() == master:  # a worker that exits must not take its siblings' metrics along
            shutil.rmtree(metrics_dir, ignore_errors=True)


# serve's private directory (its processes' metrics, the watcher's copy of the cluster), and the file
# in it naming the master that made it.
PRIVATE_DIRECTORY_PREFIX = "dra-migrate-metrics-"
MASTER_PID_FILE = "master.pid"


def _remove_abandoned_directories(parent: Path) -> None:
    """The private directories of earlier runs whose master is gone without removing its own (killed,
    out of memory): the pod's /tmp is an emptyDir, which outlives the container's restarts, and each
    would hold its copy of the cluster there. A directory that names this process's own pid is a
    former holder's too (a restarted container numbers its processes from 1 again)."""
    import shutil

    for directory in parent.glob(f"{PRIVATE_DIRECTORY_PREFIX}*"):
        try:
            pid = int((directory / MASTER_PID_FILE).read_text())
        except (OSError, ValueError):
            continue  # not one this version made, or being made
        if pid == os.getpid() or not _process_exists(pid):
            shutil.rmtree(directory, ignore_errors=True)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    return True


def _prepare(args: argparse.Namespace) -> int | tuple[Settings, Configuration]:
    """(settings, Kubernetes API configuration), or the exit code after saying what is wrong."""
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
    if args.client_ca is not None:
        problem = _client_ca_problem(args.client_ca)
        if problem:
            return fail("serve", f"cannot use --client-ca {args.client_ca}: {problem}")

    from dra_migrate.webhook.kube_client import KubeConfigError, load_configuration

    try:
        kube = load_configuration(args.kubeconfig)
    except KubeConfigError as exc:
        return fail("serve", str(exc))
    return settings, kube


def _serve_argv(args: argparse.Namespace) -> list[str]:
    argv = ["--cert", str(args.cert), "--key", str(args.key), "--port", str(args.port), "--host", args.host]
    argv += ["--workers", str(args.workers), "--log-level", args.log_level]
    if args.config is not None:
        argv += ["--config", str(args.config)]
    if args.kubeconfig is not None:
        argv += ["--kubeconfig", str(args.kubeconfig)]
    if args.client_ca is not None:
        argv += ["--client-ca", str(args.client_ca)]
    if args.access_log:
        argv.append("--access-log")
    if args.noop_route:
        argv.append("--noop-route")
    return argv


def _raise_open_files_limit() -> None:
    """Soft limit up to the hard one: every held connection is a file descriptor, and some
    container runtimes start processes with a soft limit of 1024."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _client_ca_problem(path: Path) -> str | None:
    import ssl

    try:
        ssl.create_default_context(cafile=str(path))
    except (OSError, ssl.SSLError, ValueError) as exc:
        return str(getattr(exc, "strerror", None) or exc)
    return None


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
