"""`dra-migrate serve`: the Flask app under gunicorn, over TLS.

Worker model: gunicorn `gthread`, 2 processes x 4 threads by default.
- Processes, because a review is CPU work in Python (JSON, conversion, JSON Patch) and one
  process uses one core at most; 2 matches a small webhook pod and this project's
  benchmark machine. Threads, so a review waiting on the Kubernetes API (template
  creation, at most 2 x apiTimeoutSeconds) does not hold up the reviews behind it; a
  gthread worker also holds a thread for a new connection until its first request.
- Keep-alive: kube-apiserver calls webhooks over HTTP/1.1 (it turns HTTP/2 off for them,
  and this server offers no h2 anyway) and keeps idle connections for up to 90 s (Go's
  default IdleConnTimeout, which client-go's transports inherit). The server keeps them
  for 120 s, longer than the client, so the client always closes first and never sends a
  request on a connection the server is closing (a POST is not retried: the pod create
  would fail). gthread parks idle connections in its poller, not in a thread, so long
  keep-alive costs no thread.
- TLS: certs/reload.py's hook gives each worker a context that picks up rotated files
  on the next handshake, without a restart and without failed handshakes.
- Metrics: several processes, so prometheus-client multiprocess mode (webhook/metrics.py);
  `serve` creates the directory and removes it on exit.
- No preload: each worker builds its own app after the fork, so the Kubernetes client's
  connection pool and the DeviceClass refresher thread belong to that worker. The
  configuration is parsed once, before the fork, and is never reloaded: a config change
  rolls the Deployment (the ConfigMap name carries a content hash).
- gunicorn's control socket is off: the pod's root filesystem is read-only and nobody
  runs gunicornc there.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from kubernetes import client as k8s

from dra_migrate.certs.reload import GunicornSSLContextHook, gunicorn_ssl_context_hook
from dra_migrate.configfile import Settings
from dra_migrate.webhook import metrics
from dra_migrate.webhook.app import create_app
from dra_migrate.webhook.extended import ExtendedResourceIndex
from dra_migrate.webhook.kube_client import KubeResourceApi
from dra_migrate.webhook.review import Reviewer
from dra_migrate.webhook.templates import TemplateEnsurer

# Longer than kube-apiserver's 90 s idle timeout for webhook connections (see above).
KEEPALIVE_SECONDS = 120
# terminationGracePeriodSeconds (30) minus the preStop sleep (5), with a margin.
GRACEFUL_TIMEOUT_SECONDS = 20


@dataclass(frozen=True, slots=True)
class ServeOptions:
    cert: Path
    key: Path
    port: int = 8443
    host: str = "0.0.0.0"
    workers: int = 2
    threads: int = 4
    noop_route: bool = False
    log_level: str = "info"
    access_log: bool = False


def _child_exit(server: Any, worker: Any) -> None:
    metrics.worker_exited(worker.pid)


def gunicorn_settings(options: ServeOptions, ssl_hook: GunicornSSLContextHook) -> dict[str, Any]:
    return {
        "bind": [f"{options.host}:{options.port}"],
        "worker_class": "gthread",
        "workers": options.workers,
        "threads": options.threads,
        "keepalive": KEEPALIVE_SECONDS,
        "timeout": 30,
        "graceful_timeout": GRACEFUL_TIMEOUT_SECONDS,
        "certfile": str(options.cert),
        "keyfile": str(options.key),
        "ssl_context": ssl_hook,
        "http_protocols": "h1",
        "preload_app": False,
        "control_socket_disable": True,
        "accesslog": "-" if options.access_log else None,
        "errorlog": "-",
        "loglevel": options.log_level,
        "proc_name": "dra-migrate",
        "child_exit": _child_exit,
    }


def build_app(
    settings: Settings, kube: k8s.Configuration, *, noop_route: bool, readiness: Callable[[], list[str]]
) -> Flask:
    """The WSGI app of one worker process, wired to the real Kubernetes API."""
    config, policy = settings.config, settings.webhook
    api = KubeResourceApi(kube)
    ensurer = TemplateEnsurer(
        api,
        timeout=policy.api_timeout_seconds,
        cache_seconds=policy.cache_seconds,
        on_created=metrics.template_created,
        on_api_error=metrics.api_error,
    )
    dra_version = config.target.dra_api_version
    index = ExtendedResourceIndex(
        lambda timeout: api.list_device_classes(dra_version, timeout),
        refresh_seconds=policy.cache_seconds,
        timeout=policy.api_timeout_seconds,
        on_api_error=metrics.api_error,
    )
    index.start()
    app = create_app(Reviewer(config, ensurer, index, policy=policy), readiness=readiness, noop_route=noop_route)
    # Everything loaded so far (flask, the kubernetes client's models, the engine) lives as
    # long as the worker: keep it out of the collector's full passes, which otherwise scan it
    # all (~12 ms) every so often in the middle of a review.
    gc.collect()
    gc.freeze()
    return app


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    def __init__(self, options: ServeOptions, settings: Settings, kube: k8s.Configuration) -> None:
        self._options = options
        self._settings = settings
        self._kube = kube
        self._tls = gunicorn_ssl_context_hook(options.cert, options.key)
        super().__init__()

    def load_config(self) -> None:
        for name, value in gunicorn_settings(self._options, self._tls).items():
            self.cfg.set(name, value)

    def load(self) -> Flask:
        return build_app(self._settings, self._kube, noop_route=self._options.noop_route, readiness=self.readiness)

    def readiness(self) -> list[str]:
        """Not ready while this worker has no usable certificate. The configuration was
        validated before the server started and is never replaced, so it is valid here."""
        reloader = self._tls.reloader
        if reloader is None:
            return ["TLS context not built yet"]
        if not reloader.loaded:
            return [f"TLS certificate not loaded: {reloader.last_error}"]
        return []


def run(options: ServeOptions, settings: Settings, kube: k8s.Configuration) -> int:
    try:
        WebhookServer(options, settings, kube).run()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0
