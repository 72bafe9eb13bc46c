"""When a worker refuses a review at once instead of serving it late: a queue-delay rule (CoDel, as
RPC servers use it).

A review's wait is how long it stood in the worker's queue: from the moment its request was read to
its turn, after the requests read before it (webhook/worker.py measures it). A worker serves one
review at a time, so the wait is the work queued ahead of it.

- While the queue drains now and then (it emptied, or some review waited at most TARGET_SECONDS, in
  the last INTERVAL_SECONDS), a burst is absorbed: a review is served unless it waited more than
  INTERVAL_SECONDS.
- When no review has waited less than TARGET_SECONDS for a whole INTERVAL_SECONDS, the queue is
  standing: more arrives than the worker serves. Then a review that waited more than TARGET_SECONDS
  is refused (HTTP 429, no Retry-After, so kube-apiserver applies the webhook's failurePolicy at once;
  tests/e2e/test_refusal_status.py), at a fraction of a review's cost, and the queue stays short: the
  reviews served wait about TARGET_SECONDS, the refused ones get their answer as fast.

A review is about half a millisecond of CPU, so TARGET_SECONDS is four reviews queued ahead and
INTERVAL_SECONDS a hundred: a burst of that size is served whole, a sustained excess is refused
while the reviews served keep answering in tens of milliseconds, far inside the 5 s timeoutSeconds.
A refusal still costs the request's TLS read and HTTP parsing (about a quarter of a review), so the
target is kept low: at 5 ms a worker kept serving nearly all it could and had too little left to
refuse the rest at twice its capacity (bench/webhook.py --pinned: p99 430 ms there, 31 ms at 2 ms).
"""

from __future__ import annotations

import time
from collections.abc import Callable

TARGET_SECONDS = 0.002
INTERVAL_SECONDS = 0.05


class QueueDelayShedder:
    """One per worker process; not thread-safe (a gevent worker runs one greenlet at a time)."""

    def __init__(
        self,
        target: float = TARGET_SECONDS,
        interval: float = INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._target = target
        self._interval = interval
        self._clock = clock
        self._drained = clock()  # the last time a review waited no more than the target

    def drained(self) -> None:
        """The worker has no request left (the last one was answered): the queue is empty."""
        self._drained = self._clock()

    def refuse(self, waited: float) -> bool:
        """Whether the review that waited `waited` seconds is refused rather than served."""
        now = self._clock()
        if waited <= self._target:
            self._drained = now
            return False
        standing = now - self._drained > self._interval
        return waited > (self._target if standing else self._interval)
