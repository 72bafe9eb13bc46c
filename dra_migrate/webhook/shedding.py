"""When a worker refuses a review at once instead of serving it late: a queue-delay rule (after
CoDel, with a window sized for admission bursts rather than network round trips).

A review's wait is how long it stood in the worker's queue: from the moment its request was read to
its turn, after the requests read before it (webhook/worker.py measures it). A worker serves one
review at a time, so the wait is the work queued ahead of it, new connections' handshakes included.

- While the queue drains now and then (it emptied, or some review waited at most TARGET_SECONDS, in
  the last BURST_SECONDS), a burst is absorbed: a review is served unless it waited so long that its
  answer would come after kube-apiserver gave up (LATE_SECONDS, webhook/deadline.py).
- When no review has waited less than TARGET_SECONDS for a whole BURST_SECONDS, the queue is
  standing: more arrives than the worker serves, for longer than a burst lasts. Then a review that
  waited more than TARGET_SECONDS is refused (HTTP 429, no Retry-After, so kube-apiserver applies the
  webhook's failurePolicy at once; tests/e2e/test_refusal_status.py), at a fraction of a review's
  cost, and the queue stays short: the reviews served wait about TARGET_SECONDS, the refused ones get
  their answer as fast.

Once the queue has stood, the worker stays wary for WARY_SECONDS after its last refusal: a queue that
stands again within TARGET_WINDOW_SECONDS is taken for the same overload (the refusals emptied it for
a moment, not the load), as CoDel re-enters its dropping state at once after leaving it.

BURST_SECONDS: 200 pods created at once through kube-apiserver (200 new TLS connections and reviews,
tests/e2e/test_webhook_load_e2e.py) kept a worker's queue standing for hundreds of milliseconds on the
2-core test machine, and a 50 ms window refused part of them: pods that could have been admitted in
time. A refusal still costs the request's TLS read and HTTP parsing (about a quarter of a review), so
TARGET_SECONDS is low: at 5 ms a worker at twice its capacity kept serving nearly all it could and had
too little left to refuse the rest (bench/webhook.py --pinned).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dra_migrate.webhook.deadline import MARGIN_SECONDS, REVIEW_SECONDS

TARGET_SECONDS = 0.002
BURST_SECONDS = 2.0
TARGET_WINDOW_SECONDS = 0.05
WARY_SECONDS = 10.0
LATE_SECONDS = REVIEW_SECONDS - MARGIN_SECONDS


class QueueDelayShedder:
    """One per worker process; not thread-safe (a gevent worker runs one greenlet at a time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._drained = clock()  # the last time the queue emptied or a review waited at most the target
        self._refused = -WARY_SECONDS  # the last refusal while the queue stood

    def drained(self) -> None:
        """The worker has no request left (the last one was answered): the queue is empty."""
        self._drained = self._clock()

    def refuse(self, waited: float) -> bool:
        """Whether the review that waited `waited` seconds is refused rather than served."""
        now = self._clock()
        if waited <= TARGET_SECONDS:
            self._drained = now
            return False
        window = TARGET_WINDOW_SECONDS if now - self._refused < WARY_SECONDS else BURST_SECONDS
        if now - self._drained > window:
            self._refused = now
            return True
        return waited > LATE_SECONDS
