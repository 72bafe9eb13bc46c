"""The gunicorn worker: gevent, with a bounded TLS handshake on the newest certificate.

With gevent every connection is a greenlet: an idle or slow connection costs some memory
(about 30 KiB with its TLS state), never one of a few request slots, so no number of held
connections below `worker_connections` delays a review, and webhook/connections.py keeps that
number below it. The process must be monkey-patched
before anything imports ssl or the Kubernetes client (`serve` does it first thing), so that
the client's calls to the API wait cooperatively too.

gevent's own server would do the TLS handshake before gunicorn sees the connection, with
no time limit and with the SNI callback handed the raw socket (which has no `.context` to
switch). Here the accepted socket is wrapped without handshaking, on the newest certificate
(certs/reload.py), and the handshake runs in the connection's greenlet with a deadline.

gunicorn writes a response's header block and its body separately: two TLS records, two
encryptions and two system calls for every review. The header block is held back here and
leaves with the body in one write.

Each request's wait, from its arrival (webhook/arrivals.py) to the moment its headers are parsed,
decides whether a review is served or refused at once (webhook/shedding.py); a refused one is
answered here, without the app.
"""

from __future__ import annotations

import _socket
import ctypes
import ctypes.util
import os
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import gevent
from gevent.server import StreamServer
from gunicorn import util
from gunicorn.http.body import LengthReader
from gunicorn.workers import ggevent
from gunicorn.workers.base_async import AsyncWorker
from gunicorn.workers.ggevent import GeventWorker

from dra_migrate.webhook import metrics
from dra_migrate.webhook.app import OVERLOADED_RESPONSE
from dra_migrate.webhook.arrivals import LoopClock, TimedConnection
from dra_migrate.webhook.bodies import BodyBudget, declared_size
from dra_migrate.webhook.connections import ConnectionBook
from dra_migrate.webhook.quickrefusal import MAX_BODY_BYTES as QUICK_BODY_BYTES
from dra_migrate.webhook.quickrefusal import refusable_size
from dra_migrate.webhook.shedding import INTERVAL_SECONDS, StandingQueue
from dra_migrate.webhook.tlshook import GunicornSSLContextHook

# The requests refused under overload: reviews (the no-op route answers allowed and costs as little)
SHEDDABLE = frozenset({("POST", "/mutate")})
# On SIGTERM, how long a connection that has carried no request yet may still bring its first one:
# kube-apiserver sends it right after the handshake, and never retries a POST on a new connection.
FIRST_REQUEST_GRACE_SECONDS = 1.0
# On SIGTERM, the listening socket stays open until no connection has come for ACCEPT_QUIET_SECONDS
# (at most ACCEPT_DRAIN_SECONDS): closing it resets the connections already in its backlog, and
# refuses those a client still sends there (an apiserver whose endpoints are not updated yet).
ACCEPT_QUIET_SECONDS = 1.0
ACCEPT_DRAIN_SECONDS = 5.0
# A client that has not finished its handshake by then is not kube-apiserver (Go's own
# client gives up after 10 s, and its handshakes take milliseconds).
HANDSHAKE_TIMEOUT_SECONDS = 5.0
# Connection slots (webhook/connections.py): what one client address may hold, and how many are kept
# free for new clients (probes, a restarted apiserver) by closing those waiting longest for a request.
CLIENT_SHARE_OF_CONNECTIONS = 0.5
FREE_CONNECTION_SLOTS = 200


class HandshakeTimeoutError(Exception):
    pass


class DeferredHandshake:
    """What gevent's StreamServer calls to wrap an accepted socket (`ssl_context.wrap_socket`)."""

    def __init__(self, current: Callable[[], ssl.SSLContext | None]) -> None:
        self._current = current

    def wrap_socket(self, sock: Any, server_side: bool = True, **_ignored: Any) -> ssl.SSLSocket:
        context = self._current()
        if context is None:
            raise ssl.SSLError("no TLS certificate loaded yet")
        return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)


def deferred_handshake_setting(hook: GunicornSSLContextHook) -> Callable[[Any, Any], DeferredHandshake]:
    """Value of gunicorn's `ssl_context` setting for WebhookWorker (gunicorn checks its arity: 2)."""

    def ssl_context(config: Any, default_ssl_context_factory: Any) -> DeferredHandshake:
        hook(config, default_ssl_context_factory)  # builds this worker's reloading context
        reloader = hook.reloader
        assert reloader is not None
        return DeferredHandshake(reloader.current_context)

    return ssl_context


class HeadersWithBody:
    """The client socket as a gunicorn response writes to it: the first write (the header
    block) waits for the next one (the body) and both leave in one `sendall`."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._held: bytes | None = None  # None: nothing written yet

    def sendall(self, data: bytes) -> None:
        if self._held is None:
            self._held = bytes(data)
            return
        if self._held:
            data, self._held = self._held + data, b""
        self._sock.sendall(data)

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, b""
            self._sock.sendall(held)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class WebhookWorker(GeventWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    _connections: ConnectionBook[Any]
    _queue: StandingQueue
    _bodies: BodyBudget
    _last_accept: float
    _loop_clock: LoopClock

    def run(self) -> None:
        capacity = self.worker_connections
        self._connections = ConnectionBook(
            capacity, per_client=int(capacity * CLIENT_SHARE_OF_CONNECTIONS), headroom=FREE_CONNECTION_SLOTS
        )
        self._queue = StandingQueue()
        self._bodies = BodyBudget()
        _return_large_buffers_to_the_os()
        self._loop_clock = LoopClock(gevent.get_hub().loop, on_idle=self._queue.idle)
        self._last_accept = time.monotonic()
        gevent.spawn(self._close_idle_when_stopping)
        ggevent.StreamServer = _draining_stream_server(self._drain_accepts)  # this process's servers
        super().run()

    def _drain_accepts(self) -> None:
        """Before the worker closes its listening socket on SIGTERM: the connections still coming are
        accepted and answered (each request with `Connection: close`) until none has come for a while."""
        stopped = time.monotonic()
        while True:
            now = time.monotonic()
            if now - max(stopped, self._last_accept) >= ACCEPT_QUIET_SECONDS or now - stopped >= ACCEPT_DRAIN_SECONDS:
                return
            gevent.sleep(0.05)

    def _close_idle_when_stopping(self) -> None:
        """gunicorn waits, on SIGTERM, until no connection is open, up to graceful_timeout: a kept-alive
        connection waiting for its next request (kube-apiserver keeps several) held every worker for the
        full 20 s and was then killed. Shut those down once the worker stops (a client retries a request
        it sent on a reused connection the server closed); reviews in progress finish, and their
        connections close after the answer. A connection accepted just before, or while the worker
        drains its listening socket, has its first request on the way, which nobody would retry: it
        gets FIRST_REQUEST_GRACE_SECONDS from its handshake for it to arrive."""
        while self.alive:
            gevent.sleep(0.2)
        while True:  # until the process exits
            now = time.monotonic()
            self._shut_down(
                [
                    connection
                    for connection in self._connections.waiting_connections()
                    if connection.requests or now - connection.handshaken >= FIRST_REQUEST_GRACE_SECONDS
                ]
            )
            gevent.sleep(0.1)

    @staticmethod
    def _shut_down(connections: list[Any]) -> None:
        """End connections whose handlers wait for a request: their read sees the end of the stream
        and they close. Shut down through a duplicate of the descriptor (one TCP socket either way):
        the TLS socket's own `shutdown`, and gevent's, drop its TLS state or wake the waiting read
        with an error, each logged with a traceback."""
        for sock in connections:
            with suppress(OSError), _duplicate(sock) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        client = TimedConnection(client, self._loop_clock, screen=self._refuse_early)
        self._last_accept = client.accepted
        admitted, displaced = self._connections.open(client, addr[0] if isinstance(addr, tuple) else str(addr))
        if not admitted:
            metrics.connections_closed(metrics.CLIENT_OVER_SHARE)
            util.close(client)
            return
        try:
            if displaced:
                self._shut_down(displaced)
                metrics.connections_closed(metrics.CLIENT_OVER_SHARE, len(displaced))
            if reclaimed := self._connections.to_reclaim(_has_input):
                self._shut_down(reclaimed)
                metrics.connections_closed(metrics.RECLAIMED_WAITING, len(reclaimed))
            self._handshake_and_serve(listener, client, addr)
        finally:
            self._connections.close(client)

    def _handshake_and_serve(self, listener: Any, client: Any, addr: Any) -> None:
        try:
            client.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
            with gevent.Timeout(HANDSHAKE_TIMEOUT_SECONDS, HandshakeTimeoutError):
                client.do_handshake()
        except (HandshakeTimeoutError, OSError) as exc:  # ssl.SSLError is an OSError
            self.log.debug("TLS handshake with %s failed: %s", addr, exc)
            util.close(client)
            return
        # Each read and write may wait as long as an idle kept-alive connection, no longer:
        # a request that stalls half-way ends too.
        client.settimeout(self.cfg.keepalive)
        client.handshake_done()
        self._connections.waiting(client, first=True)
        AsyncWorker.handle(self, listener, client, addr)

    def handle_request(self, listener_name: Any, req: Any, sock: TimedConnection, addr: Any) -> Any:
        self._connections.serving(sock)
        try:
            return self._serve_or_refuse(listener_name, req, sock, addr)
        finally:
            sock.answered()
            sock.at_boundary = _request_read(req)
            if self.alive:
                self._connections.waiting(sock)

    def _refuse_early(self, sock: TimedConnection, data: bytes) -> bytes:
        """Where a request begins, while the queue stands: the plain review requests at the head of
        `data` that the queue refuses are answered here, without gunicorn's parser (which costs more
        than the refusal, webhook/quickrefusal.py); what is left goes to gunicorn."""
        while data and self._queue.standing and self.alive:
            size = refusable_size(data)
            if size is None:
                break
            arrived = sock.arrived()
            since = sock.accepted - INTERVAL_SECONDS if not sock.requests else arrived
            if not self._queue.refuse(time.monotonic() - arrived, since):  # no change while it stands
                break
            while len(data) < size:  # the rest of its body
                more = sock.recv_undated(size - len(data))
                if not more:
                    return b""
                data += more
            data = data[size:]
            self._refuse(sock, arrived)
            sock.answered()
        return data

    def _serve_or_refuse(self, listener_name: Any, req: Any, sock: TimedConnection, addr: Any) -> Any:
        if (req.method, req.path) not in SHEDDABLE:
            return self._serve(listener_name, req, sock, addr)
        arrived = sock.arrived()
        # A connection's first request belongs to the moment it was accepted, an interval earlier:
        # a burst of new connections (kube-apiserver dials one per review it cannot put on an idle
        # connection) arrives over a moment, and their handshakes end one after the other.
        since = sock.accepted - INTERVAL_SECONDS if not sock.requests else arrived
        if self.alive and self._queue.refuse(time.monotonic() - arrived, since):
            _read_small_body(req)
            return self._refuse(sock, arrived)
        size = declared_size(req.headers)
        if not self._bodies.take(size):  # its body would take memory past the worker's budget
            return self._refuse(sock, arrived)
        try:
            return self._serve(listener_name, req, sock, addr)
        finally:  # answered, or its connection cut
            self._bodies.give_back(size)

    def _serve(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> Any:
        out = HeadersWithBody(sock)
        try:
            return super().handle_request(listener_name, req, out, addr)
        finally:
            with suppress(OSError):  # the client left; the connection closes next
                out.flush()

    @staticmethod
    def _refuse(sock: Any, arrived: float) -> bool:
        """A 429 without running the app; the connection stays open (its parser skips the body)."""
        try:
            sock.sendall(OVERLOADED_RESPONSE)
        finally:
            metrics.record_refusal(time.monotonic() - arrived)
        return True


def _read_small_body(req: Any) -> None:
    """Read the body of a request refused unread when it is small (gunicorn would skip it next), so
    that the next request begins where the connection's reads begin."""
    reader = getattr(req.body, "reader", None)
    if isinstance(reader, LengthReader) and reader.length <= QUICK_BODY_BYTES:
        req.body.read()


def _request_read(req: Any) -> bool:
    """Whether the request is read to its end and nothing after it was read ahead: the next read of
    the connection begins the next request."""
    reader = getattr(req.body, "reader", None)
    if not isinstance(reader, LengthReader) or reader.length:
        return False
    buffered = req.unreader.buf
    buffered.seek(0, os.SEEK_END)
    return bool(buffered.tell() == 0)


def _return_large_buffers_to_the_os() -> None:
    """glibc serves a freed large buffer's memory to later ones instead of returning it, once it has
    raised its mmap threshold past that size (it does after the first such free): a few large
    reviews left the worker's memory high for good. A fixed threshold keeps every buffer over it
    (request bodies, their parsed copies' large strings) in its own mapping, returned when freed."""
    path = ctypes.util.find_library("c")
    if path is None:
        return
    with suppress(OSError, AttributeError):
        ctypes.CDLL(path).mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)


_M_MMAP_THRESHOLD = -3  # glibc's malloc.h
_MMAP_THRESHOLD_BYTES = 256 * 1024


def _draining_stream_server(drain: Callable[[], None]) -> type[StreamServer]:
    """gevent's StreamServer whose close (gunicorn's worker calls it once stopping) first lets `drain`
    run, accepting and serving meanwhile."""

    class DrainingStreamServer(StreamServer):  # type: ignore[misc]  # gevent ships partial hints
        def close(self) -> None:
            drain()
            super().close()

    return DrainingStreamServer


@contextmanager
def _duplicate(sock: Any) -> Iterator[_socket.socket]:
    """The connection's TCP socket through a duplicate descriptor, outside gevent and TLS: a call on
    it neither waits in the hub nor touches the TLS state the connection's handler is using."""
    duplicate = _socket.socket(fileno=os.dup(sock.fileno()))
    try:
        yield duplicate
    finally:
        duplicate.close()


def _has_input(sock: Any) -> bool:
    """Bytes of a request already received, decrypted or not: the connection is not idle. Peeked
    through a duplicate of the descriptor, not select() (limited to descriptors below 1,024)."""
    try:
        if sock.pending():
            return True
        with _duplicate(sock) as duplicate:
            return bool(duplicate.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except (BlockingIOError, InterruptedError):
        return False  # nothing received
    except (OSError, ValueError):
        return False  # closed meanwhile: shutting it down costs nothing
