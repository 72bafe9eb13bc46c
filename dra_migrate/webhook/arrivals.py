"""When a request arrived, as seen from a gevent worker's event loop (webhook/shedding.py uses it).

A request's bytes wait in the socket until the loop polls and wakes its connection's greenlet, and
then until the greenlets woken before it have run: that wait is the queue. A greenlet only learns
when it was woken, so the arrival is estimated from the loop's own iterations (a prepare watcher runs
as the loop goes to poll, a check watcher as the poll returns):

- When the poll waited (the loop had nothing to do), what it found arrived as it returned.
- When the poll returned at once, what it found arrived while the previous iteration ran: after that
  iteration's poll returned, and after the connection's previous answer (a client sends its next
  request on the connection after that answer; kube-apiserver does not pipeline).
- A request read without waiting arrived with the one before it (pipelined behind it), or with the
  handshake's last flight (a connection's first request).

A poll that waited at least IDLE_SECONDS also tells that the worker ran out of work (`on_idle`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

IDLE_SECONDS = 0.001


class LoopClock:
    """The poll times of one gevent loop; installed once per worker process."""

    def __init__(self, loop: Any, on_idle: Callable[[], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._on_idle = on_idle
        self.iteration = 0  # polls so far: a read that spans one waited for its input
        now = clock()
        self._entered = self._polled = self._previous = now
        self._waited = True
        # ref=False: the watchers alone do not keep the loop running.
        self._prepare = loop.prepare(ref=False)
        self._check = loop.check(ref=False)
        self._prepare.start(self._entering)
        self._check.start(self._returned)

    def _entering(self) -> None:
        self._entered = self._clock()

    def _returned(self) -> None:
        now = self._clock()
        self.iteration += 1
        self._previous, self._polled = self._polled, now
        self._waited = now - self._entered >= IDLE_SECONDS
        if self._waited:
            self._on_idle()

    def arrival(self, not_before: float) -> float:
        """When input found by the last poll arrived, for a connection that could not have sent it
        before `not_before`."""
        if self._waited:
            return self._polled
        return max(self._previous, not_before)


# What a worker may do with the bytes read where a request begins, before gunicorn parses them:
# the bytes left for gunicorn (webhook/quickrefusal.py).
Screen = Callable[["TimedConnection", bytes], bytes]


class TimedConnection:
    """A client socket as gunicorn's parser reads it, noting when each request arrived: the first
    read after an answer that had to wait for input dates the next request (see above). Where a
    request begins (`at_boundary`: nothing of it read yet, nothing of the previous one left), what
    is read goes through `screen` first."""

    def __init__(
        self, sock: Any, clock: LoopClock, screen: Screen | None = None, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._sock = sock
        self._loop_clock = clock
        self._screen = screen
        self._now = now
        self.accepted = self.handshaken = now()
        self._answered = self.accepted  # the previous answer left (or the handshake ended)
        self._arrived: float | None = None  # this request's, once a read waited for it
        self._previous = self.accepted  # the previous request's arrival (or the handshake's end)
        self.requests = 0
        self.at_boundary = False

    def handshake_done(self) -> None:
        self.handshaken = self._answered = self._previous = self._now()
        self.at_boundary = True

    def recv(self, size: int) -> bytes:
        while True:
            data = self._dated_recv(size)
            if not data or not self.at_boundary or self._screen is None:
                break
            data = self._screen(self, data)
            if data:
                break
            # every request read was answered there: the next one begins at the next read
        if data:
            self.at_boundary = False
        return data

    def recv_undated(self, size: int) -> bytes:
        data: bytes = self._sock.recv(size)
        return data

    def _dated_recv(self, size: int) -> bytes:
        if self._arrived is not None:
            return self.recv_undated(size)
        before = self._loop_clock.iteration
        data = self.recv_undated(size)
        if self._loop_clock.iteration != before:
            self._arrived = self._loop_clock.arrival(self._answered)
        return data

    def arrived(self) -> float:
        """When the request being taken up arrived."""
        return self._previous if self._arrived is None else self._arrived

    def answered(self) -> None:
        self.requests += 1
        self._previous = self.arrived()
        self._answered = self._now()
        self._arrived = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)
