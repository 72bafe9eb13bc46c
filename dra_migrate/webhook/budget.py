"""One review's allowance of time for Kubernetes API calls.

The deploy's MutatingWebhookConfiguration timeoutSeconds is sized for BUDGET_CALLS calls of
apiTimeoutSeconds each; every call a review makes (a namespace read, a quota list, a template
get or create) takes the per-call timeout or what is left, so the server always answers with
its own decision before the apiserver gives up on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dra_migrate.webhook import deadline
from dra_migrate.webhook.resource_api import ApiError

BUDGET_CALLS = 2


class Budget:
    def __init__(self, per_call: float, calls: int = BUDGET_CALLS, clock: Callable[[], float] = time.monotonic):
        self._per_call = per_call
        self._clock = clock
        left = deadline.remaining()  # the review's own deadline (webhook/deadline.py), if any
        self._deadline = clock() + min(per_call * calls, per_call * calls if left is None else left)

    def timeout(self, operation: str) -> float:
        left = self._deadline - self._clock()
        if left <= 0.01:
            raise ApiError(operation, "timeout", "the review's time for Kubernetes API calls is used up")
        return min(self._per_call, left)
