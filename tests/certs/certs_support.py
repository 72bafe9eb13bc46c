"""Shared helpers for the certs tests: a Kubernetes-style Secret volume and a real TLS server.

(A plain module rather than conftest.py: tests/ has no __init__.py files, and a unique
name avoids clashing with other parts' helpers.)
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cryptography import x509

from dra_migrate.certs.reload import ReloadingTLSContext


class _OkHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class TLSServer(http.server.ThreadingHTTPServer):
    """Handshakes happen in the per-connection threads, as in gunicorn's gthread worker."""

    daemon_threads = True

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _OkHandler)
        self.tls_context = context
        self.handshake_errors: list[BaseException] = []

    def finish_request(self, request: Any, client_address: Any) -> None:
        tls = self.tls_context.wrap_socket(request, server_side=True)
        try:
            _OkHandler(tls, client_address, self)
        finally:
            tls.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if exc is not None:
            self.handshake_errors.append(exc)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@contextmanager
def running_server(reloader: ReloadingTLSContext) -> Iterator[TLSServer]:
    server = TLSServer(reloader.context)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def client_context(
    ca_file: Path,
    *,
    min_version: ssl.TLSVersion | None = None,
    max_version: ssl.TLSVersion | None = None,
) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_file))
    if min_version is not None:
        context.minimum_version = min_version
    if max_version is not None:
        context.maximum_version = max_version
    return context


def fetch_serial(port: int, context: ssl.SSLContext, server_hostname: str = "localhost") -> int:
    """One verified HTTPS request; returns the serial of the certificate the server presented."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=server_hostname) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        tls.sendall(b"GET / HTTP/1.0\r\nHost: webhook\r\n\r\n")
        response = b""
        while chunk := tls.recv(4096):
            response += chunk
    assert response.startswith(b"HTTP/1.0 200"), response[:80]
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


class HandshakeLoop:
    """Client threads handshaking nonstop; records every serial seen and every failure."""

    def __init__(self, port: int, context: ssl.SSLContext, threads: int = 4) -> None:
        self._port = port
        self._context = context
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.serials: list[int] = []
        self.failures: list[BaseException] = []
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                serial = fetch_serial(self._port, self._context)
            except Exception as exc:
                with self._lock:
                    self.failures.append(exc)
            else:
                with self._lock:
                    self.serials.append(serial)

    def seen(self, serial: int) -> bool:
        with self._lock:
            return serial in self.serials

    def __enter__(self) -> HandshakeLoop:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)


def file_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777
