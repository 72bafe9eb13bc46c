"""`dra-migrate serve`: the Flask app under gunicorn, over TLS.

Worker model: gunicorn with gevent (webhook/worker.py), 2 processes by default.
- gevent, because connections must not hold request slots: with gunicorn's gthread worker
  (threads), a handful of idle TLS connections or a burst of slow ones left no thread
  for reviews, and reviews waiting on an unreachable API queued behind each other. Under
  gevent a connection is a greenlet: idle, slow and waiting connections cost memory only,
  up to WORKER_CONNECTIONS per process, of which one client holds half at most and the longest
  idle are closed when few are left (webhook/connections.py). A review is short CPU work (its size is bounded,
  webhook/podcheck.py), so running one at a time per process costs nothing.
- Processes, because a review is CPU work in Python and one process uses one core at most.
- Keep-alive: kube-apiserver calls webhooks over HTTP/1.1 (it turns HTTP/2 off for them,
  and this server offers no h2 anyway) and keeps idle connections for up to 90 s (Go's
  default IdleConnTimeout, which client-go's transports inherit). The server keeps them
  for 120 s, longer than the client, so the client always closes first and never sends a
  request on a connection the server is closing (a POST is not retried: the pod create
  would fail). A handshake must finish in 5 s; each read or write may wait 120 s.
- TLS: certs/reload.py gives the server a context that picks up rotated files for the next
  handshake, without a restart and without failed handshakes; built in the master before the
  workers fork, so every worker, a restarted one too, serves the same pair (webhook/tlshook.py).
- Metrics: several processes, so prometheus-client multiprocess mode (webhook/metrics.py);
  `serve` creates the directory and removes it on exit.
- One copy of the cluster per pod: a watcher process, forked by the master before the workers and
  again when it exits (webhook/watcher.py), lists and watches it into a file the workers read
  (webhook/sharedcopy.py).
- No preload: each worker builds its own app after the fork, so the Kubernetes client's
  connection pool belongs to that worker. The configuration
  is parsed once, before the fork, and is never reloaded: a config change rolls the
  Deployment (the ConfigMap name carries a content hash).
- gunicorn's control socket is off: the pod's root filesystem is read-only and nobody
  runs gunicornc there.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import sqlite3
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from kubernetes import client as k8s

from dra_migrate.configfile import Settings
from dra_migrate.webhook import metrics, sharedcopy
from dra_migrate.webhook.app import create_app
from dra_migrate.webhook.cluster import ClusterWatch
from dra_migrate.webhook.collector import lock_directory
from dra_migrate.webhook.kube_client import KubeResourceApi
from dra_migrate.webhook.namespaces import own_namespace
from dra_migrate.webhook.policy import WEBHOOK_SECTION
from dra_migrate.webhook.review import Reviewer
from dra_migrate.webhook.tlshook import GunicornSSLContextHook, gunicorn_ssl_context_hook
from dra_migrate.webhook.watcher import WatcherProcess, watch_into
from dra_migrate.webhook.worker import deferred_handshake_setting

log = logging.getLogger(__name__)

# Longer than kube-apiserver's 90 s idle timeout for webhook connections (see above).
KEEPALIVE_SECONDS = 120
# terminationGracePeriodSeconds (30) minus the preStop sleep (5), with a margin.
GRACEFUL_TIMEOUT_SECONDS = 20
# Connections per process, idle ones included: one file descriptor and about 30 KiB each,
# so 2 x 4,000 of them stay within the 512 MiB memory limit of deploy/base.
WORKER_CONNECTIONS = 4000


@dataclass(frozen=True, slots=True)
class ServeOptions:
    cert: Path
    key: Path
    port: int = 8443
    host: str = "0.0.0.0"
    workers: int = 2
    noop_route: bool = False
    log_level: str = "info"
    access_log: bool = False
    client_ca: Path | None = None  # verify the apiserver's client certificate (reviews require one)


def _child_exit(server: Any, worker: Any) -> None:
    metrics.worker_exited(worker.pid)


def gunicorn_settings(options: ServeOptions, ssl_hook: GunicornSSLContextHook) -> dict[str, Any]:
    return {
        "bind": [f"{options.host}:{options.port}"],
        "worker_class": "dra_migrate.webhook.worker.WebhookWorker",
        "workers": options.workers,
        "worker_connections": WORKER_CONNECTIONS,
        "keepalive": KEEPALIVE_SECONDS,
        "timeout": 30,
        "graceful_timeout": GRACEFUL_TIMEOUT_SECONDS,
        "certfile": str(options.cert),
        "keyfile": str(options.key),
        "ssl_context": deferred_handshake_setting(ssl_hook),
        # Read by the ssl_context hook: ask for and verify client certificates, but admit clients
        # without one (kubelet probes); webhook/app.py requires one for reviews.
        **({"ca_certs": str(options.client_ca), "cert_reqs": ssl.CERT_OPTIONAL} if options.client_ca else {}),
        "do_handshake_on_connect": True,  # WebhookWorker does it, with a deadline
        "http_protocols": "h1",
        "preload_app": False,
        "control_socket_disable": True,
        "accesslog": "-" if options.access_log else None,
        "errorlog": "-",
        "loglevel": options.log_level,
        "proc_name": "dra-migrate",
        "child_exit": _child_exit,
        # One certificate state: built and checked in the master, inherited by each worker (tlshook.py).
        "when_ready": lambda server: ssl_hook.check_in_master(),
        "post_fork": lambda server, worker: ssl_hook.forked(),
    }


def build_app(
    settings: Settings,
    kube: k8s.Configuration,
    *,
    noop_route: bool,
    readiness: Callable[[], list[str]],
    require_client_certificate: bool = False,
    shared_copy: Path | None = None,
) -> Flask:
    """The WSGI app of one worker process, wired to the real Kubernetes API; its copies of the cluster
    are read from `shared_copy` (the watcher process writes them), else watched by the worker."""
    config, policy = settings.config, settings.get(WEBHOOK_SECTION)
    own = own_namespace()
    if own and own not in policy.excluded_namespaces:  # never convert (or gate) the webhook's own pods
        policy = dataclasses.replace(policy, excluded_namespaces=(*policy.excluded_namespaces, own))
    api = KubeResourceApi(kube)
    caches = ClusterWatch(
        api,
        config.target,
        detect_target=not settings.target_given,
        timeout=policy.api_timeout_seconds,
        on_api_error=metrics.api_error,
        on_event=metrics.watch_event,
        on_staleness=metrics.watch_staleness,
        collect_unused_after=policy.unused_template_grace_seconds,
        copies=None if shared_copy is None else sharedcopy.SharedCopies(shared_copy),
    ).start()
    reviewer = Reviewer.for_api(
        config, api, policy=policy, caches=caches, on_created=metrics.template_created, on_api_error=metrics.api_error
    )
    metrics.set_known_resources(config.mappings.exact_names())
    app = create_app(
        reviewer,
        readiness=readiness,
        noop_route=noop_route,
        require_client_certificate=require_client_certificate,
    )
    # Everything loaded so far (flask, the kubernetes client's models, the engine) lives as
    # long as the worker: keep it out of the collector's full passes, which otherwise scan it
    # all (~12 ms) every so often in the middle of a review.
    gc.collect()
    gc.freeze()
    return app


def _shared_copy_file() -> Path | None:
    """A new copy file in serve's private directory; without one (or where it cannot be made), each
    worker watches the cluster itself."""
    directory = lock_directory()
    if directory is None:
        return None
    try:
        return sharedcopy.create(directory)
    except (OSError, sqlite3.Error) as exc:
        log.warning("cannot create the cluster copy's file in %s (%s): each worker watches the cluster", directory, exc)
        return None


class WatchingArbiter(Arbiter):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's master, which also keeps the watcher process running (before the workers start,
    and whenever it looks after them) and stops it after them."""

    def __init__(self, app: Any, watcher: WatcherProcess) -> None:
        self._watcher = watcher
        super().__init__(app)

    def manage_workers(self) -> None:
        self._watcher.keep_running(self.LISTENERS, self.SIGNALS)
        super().manage_workers()

    def stop(self, graceful: bool = True) -> None:
        super().stop(graceful)
        self._watcher.stop()


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    def __init__(self, options: ServeOptions, settings: Settings, kube: k8s.Configuration) -> None:
        self._options = options
        self._settings = settings
        self._kube = kube
        self._shared_copy = _shared_copy_file()
        self._tls = gunicorn_ssl_context_hook(
            options.cert,
            options.key,
            on_loaded=lambda info: metrics.certificate_loaded(info.not_after.timestamp()),
            on_error=lambda message: metrics.certificate_reload_failed(),
        )
        super().__init__()

    def load_config(self) -> None:
        for name, value in gunicorn_settings(self._options, self._tls).items():
            self.cfg.set(name, value)
        self._tls.prepare(self.cfg)

    def load(self) -> Flask:
        return build_app(
            self._settings,
            self._kube,
            noop_route=self._options.noop_route,
            readiness=self.readiness,
            require_client_certificate=self._options.client_ca is not None,
            shared_copy=self._shared_copy,
        )

    def run(self) -> None:
        if self._shared_copy is None:
            super().run()
            return
        settings, kube = self._settings, self._kube
        watcher = WatcherProcess(
            self._shared_copy,
            lambda path, master: watch_into(path, settings, kube, master),
            after_fork=self._tls.forked,  # the master's certificate checks stop, as in a worker
        )
        try:
            WatchingArbiter(self, watcher).run()
        except RuntimeError as exc:  # as gunicorn's own run() reports it
            print(f"\nError: {exc}\n", file=sys.stderr)
            sys.exit(1)

    def readiness(self) -> list[str]:
        """Not ready while this worker serves no certificate, or one that is expired or not
        valid yet (kube-apiserver would refuse every handshake). The configuration was
        validated before the server started and is never replaced, so it is valid here."""
        reloader = self._tls.reloader
        if reloader is None:
            return ["TLS context not built yet"]
        problem = reloader.certificate_problem()
        return [f"TLS: {problem}"] if problem else []


def run(options: ServeOptions, settings: Settings, kube: k8s.Configuration) -> int:
    try:
        WebhookServer(options, settings, kube).run()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0
