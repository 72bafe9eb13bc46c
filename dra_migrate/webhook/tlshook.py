"""gunicorn's `ssl_context` setting for `serve`: one reloading TLS context (certs/reload.py, a library
that knows nothing of gunicorn) for the whole server.

`serve` builds it in the gunicorn master before any worker forks, and the master looks at the files
every check interval and reports each rotation (log, metrics) once. A worker starts from the
master's state at its fork and then checks on its own handshakes, silently, by the same rules: so
a worker forked after a rotation was refused serves the pair its siblings serve, not the refused
files. (Used as a plain gunicorn setting instead, each worker builds its own on first use.)"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from typing import Any

import gevent

from dra_migrate.certs.reload import CertificateInfo, ReloadingTLSContext, StrPath

log = logging.getLogger(__name__)


class GunicornSSLContextHook:
    """Value for gunicorn's `ssl_context` setting (arity 2, as gunicorn checks).

    gunicorn calls the hook for every accepted connection in sync/gthread workers, so the
    reloading context is built once, by `prepare` in the master or else on first use, and reused.
    It ignores gunicorn's default factory (which re-reads the files on every call) but
    copies its `ciphers`, `ca_certs` and `cert_reqs` settings. ALPN is not offered, so
    clients speak HTTP/1.1.
    """

    def __init__(
        self,
        cert_file: StrPath | None,
        key_file: StrPath | None,
        check_interval: float,
        on_loaded: Callable[[CertificateInfo], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self._cert_file = cert_file
        self._key_file = key_file
        self._check_interval = check_interval
        self._on_loaded = on_loaded
        self._on_error = on_error
        self._lock = threading.Lock()
        self._reloader: ReloadingTLSContext | None = None
        self._checker: gevent.Greenlet | None = None

    @property
    def reloader(self) -> ReloadingTLSContext | None:
        """This process's reloader (None before it is built), for readiness probes."""
        return self._reloader

    def prepare(self, config: Any) -> None:
        """Build the reloader now, in the master, from gunicorn's settings. Once only: gunicorn
        reads its settings again on SIGHUP, and a fresh reloader would forget the rotations
        refused so far and give the new workers the files as they are."""
        self._built(config)

    def check_in_master(self) -> None:
        """gunicorn `when_ready`: look at the files every check interval in the master, so that a
        worker forked later starts from every rotation taken or refused until then."""
        self._checker = gevent.spawn(self._check_every_interval)

    def _check_every_interval(self) -> None:
        while True:
            gevent.sleep(self._check_interval)
            reloader = self._reloader
            if reloader is not None:
                try:
                    reloader.reload_if_changed()
                except Exception:  # the next interval tries again; the served pair is unchanged
                    log.exception("TLS certificate check failed")

    def forked(self) -> None:
        """gunicorn `post_fork`, in the new worker: carry on from the master's state (the worker
        checks on its own handshakes; the master's loop, copied by the fork, ends here)."""
        if self._checker is not None:
            self._checker.kill(block=False)
            self._checker = None
        if self._reloader is not None:
            self._reloader.forked()

    def __call__(self, config: Any, default_ssl_context_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        return self._built(config).context

    def _built(self, config: Any) -> ReloadingTLSContext:
        """The reloader, built from gunicorn's settings the first time only."""
        reloader = self._reloader
        if reloader is None:
            with self._lock:
                if self._reloader is None:
                    self._reloader = self._build(config)
                reloader = self._reloader
        return reloader

    def _build(self, config: Any) -> ReloadingTLSContext:
        cert_file = self._cert_file or config.certfile
        key_file = self._key_file or config.keyfile

        def configure(context: ssl.SSLContext) -> None:
            if getattr(config, "ca_certs", None):
                context.load_verify_locations(cafile=config.ca_certs)
            context.verify_mode = ssl.VerifyMode(getattr(config, "cert_reqs", ssl.CERT_NONE))
            if getattr(config, "ciphers", None):
                context.set_ciphers(config.ciphers)

        # Not fatal when the pair is unusable at start: raising here would make each
        # connection fail with a traceback; instead handshakes are refused until it loads.
        return ReloadingTLSContext(
            cert_file,
            key_file,
            check_interval=self._check_interval,
            configure=configure,
            require_initial=False,
            on_loaded=self._on_loaded,
            on_error=self._on_error,
        )


def gunicorn_ssl_context_hook(
    cert_file: StrPath | None = None,
    key_file: StrPath | None = None,
    *,
    check_interval: float = 1.0,
    on_loaded: Callable[[CertificateInfo], None] | None = None,
    on_error: Callable[[str], None] | None = None,
) -> GunicornSSLContextHook:
    """`ssl_context = gunicorn_ssl_context_hook(certfile, keyfile)` in a gunicorn config file.

    Without arguments the hook uses gunicorn's own `certfile`/`keyfile` settings, which
    must be set anyway: gunicorn only enables TLS when they are.
    """
    return GunicornSSLContextHook(cert_file, key_file, check_interval, on_loaded, on_error)
