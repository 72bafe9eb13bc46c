"""The time a review has: kube-apiserver gives up after the webhook's timeoutSeconds.

An AdmissionReview carries no deadline, so the server assumes the one deploy/base registers
(timeoutSeconds: 5; tests/deploy keeps the two equal) and counts from the moment the
request reached the app. (Not from the connection's accept: kube-apiserver's client keeps
spare connections it dialed during a burst and sends their first request much later.)
A review answers, and starts no Kubernetes API call, after REVIEW_SECONDS - MARGIN_SECONDS:
the API budget of each review is cut to what is left (webhook/templates.py), so no template
is created for a review the apiserver has already failed, and the configured `apiUnavailable`
decision still reaches it in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

REVIEW_SECONDS = 5.0
MARGIN_SECONDS = 0.5

# Per request: a contextvar is private to each greenlet (and thread), so reviews never see
# each other's deadline.
_DEADLINE: ContextVar[float | None] = ContextVar("dra_migrate_review_deadline", default=None)


@contextmanager
def review_deadline(started: float, seconds: float = REVIEW_SECONDS - MARGIN_SECONDS) -> Iterator[None]:
    """Within the block, `remaining()` counts down from `seconds` after `started` (time.monotonic)."""
    token = _DEADLINE.set(started + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining(clock: Callable[[], float] = time.monotonic) -> float | None:
    """Seconds left for the current review; None outside a review."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - clock()
