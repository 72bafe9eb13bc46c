"""When a worker refuses a review at once instead of serving it late: a standing-queue rule after
CoDel (Nichols and Jacobson, "Controlling Queue Delay"), with a target of TARGET_SECONDS and an
interval of INTERVAL_SECONDS.

A review's sojourn is the time from its arrival (its first bytes on a kept-alive connection, or the
end of the TLS handshake on a new one; webhook/arrivals.py estimates it from the event loop) to the
moment its worker takes it up. A worker serves one review at a time, so the sojourn is the work
queued ahead of it.

- The queue stands when every review taken up for a whole INTERVAL_SECONDS waited more than
  TARGET_SECONDS and the worker never ran out of work in between (its event loop never waited for
  input: `idle`). More arrives than the worker serves, for longer than the interval.
- While the queue stands, a review that arrived after it began to stand (on a new connection: whose
  connection was accepted more than an interval after, the time a burst's connections take to come)
  and waited more than TARGET_SECONDS is refused (HTTP 429, no
  Retry-After, so kube-apiserver applies the webhook's failurePolicy at once;
  tests/e2e/test_refusal_status.py). A refusal costs a fraction of a review,
  so the queue empties down to the target: the reviews served waited about TARGET_SECONDS, and the
  refused ones get their answer as fast.
- The reviews that arrived before the queue began to stand are served: a burst (200 pods created at
  once: 200 new connections and reviews) arrives within milliseconds and then only drains, so none of
  it is refused however long it takes to drain. A sustained overload keeps arriving and is refused.
  A review whose answer would come after kube-apiserver gave up (LATE_SECONDS, webhook/deadline.py)
  is refused whenever it arrived: its answer is of no use.
- The queue stops standing when the worker runs out of work (`idle`). Refusals are cheap, so under
  a sustained overload the worker does run out of work now and then, for the moment its clients take
  to send the next requests. If a review over the target comes within REENTER_SECONDS of that, the
  overload went on: the queue stands again at once, as from the moment it stopped, and what arrived
  since and waited past the target is refused. (Waiting a whole interval again, with everything that
  arrived meanwhile served however late, made the queue grow by an interval's excess each time and
  the refusals behind it wait hundreds of milliseconds; CoDel too resumes its dropping state soon
  after leaving it.) Past REENTER_SECONDS nothing outlives the idle moment: the queue must stand for a
  whole interval again before anything is refused. An idle worker therefore never refuses.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dra_migrate.webhook.deadline import MARGIN_SECONDS, REVIEW_SECONDS

TARGET_SECONDS = 0.005
INTERVAL_SECONDS = 0.1
LATE_SECONDS = REVIEW_SECONDS - MARGIN_SECONDS
REENTER_SECONDS = 0.5


class StandingQueue:
    """One per worker process; not thread-safe (a gevent worker runs one greenlet at a time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._above_since: float | None = None  # first of an unbroken run of reviews over the target
        self._standing_since: float | None = None  # the queue stands (CoDel's dropping state)
        self._stopped_at: float | None = None  # when it last stopped standing

    @property
    def standing(self) -> bool:
        return self._standing_since is not None

    def idle(self) -> None:
        """The worker ran out of work (its event loop waited for input): the queue is empty."""
        if self._standing_since is not None:
            self._stopped_at = self._clock()
        self._above_since = self._standing_since = None

    def refuse(self, sojourn: float, arrived: float) -> bool:
        """Whether a review taken up now, which waited `sojourn` seconds and arrived at `arrived`
        (the clock's time; a new connection's first review: an interval before it was accepted), is
        refused rather than served."""
        if sojourn > LATE_SECONDS:
            return True
        if sojourn <= TARGET_SECONDS:
            if self._standing_since is None:
                self._above_since = None
            return False
        now = self._clock()
        if self._standing_since is None:
            if self._stopped_at is not None and now - self._stopped_at < REENTER_SECONDS:
                self._standing_since = self._stopped_at  # the overload went on through an idle moment
            elif self._above_since is None:
                self._above_since = now
                return False
            elif now - self._above_since >= INTERVAL_SECONDS:
                self._standing_since = now
            else:
                return False
        return arrived >= self._standing_since
