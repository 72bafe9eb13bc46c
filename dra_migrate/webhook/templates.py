"""Make sure the ResourceClaimTemplates a converted Pod references exist with the spec it needs.

Templates, never ResourceClaims: a claim made at admission has no owner (the pod has no UID
yet) and outlives the pod; the resourceclaim controller owns claims made from a template.

The common path makes no API call: a template verified or created recently is remembered
per worker for `cache_seconds`. Template names carry a hash of their spec
(dra_migrate.engine.templates.template_name), so a remembered name stands for its spec.
The memory expires so that a template deleted by hand is recreated for later pods.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from dra_migrate.engine import spec_matches
from dra_migrate.webhook import deadline
from dra_migrate.webhook.resource_api import AlreadyExistsError, ApiError, ResourceApi

# The deploy's MutatingWebhookConfiguration timeoutSeconds is sized for "a get and a create"
# of apiTimeoutSeconds each; the whole review's API work stays inside that.
BUDGET_CALLS = 2
MAX_REMEMBERED = 10_000

TemplateKey = tuple[str, str, str]  # (apiVersion, namespace, name)


class TemplateConflictError(Exception):
    """A template with our name exists but asks for different devices: never reuse it silently."""

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(
            f'ResourceClaimTemplate "{namespace}/{name}" already exists with a different spec; '
            "dra-migrate does not reuse or change it. Delete it (it is recreated with the right spec "
            "for the next pod) or opt the pod out with the label dra-migrate.io/skip=true"
        )
        self.namespace = namespace
        self.name = name


class Budget:
    """One review's allowance of API time; each call gets the per-call timeout or what is left."""

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


class RememberedTemplates:
    """Thread-safe, size-bounded memory of templates known to exist, each for `ttl` seconds."""

    def __init__(self, ttl: float, max_entries: int = MAX_REMEMBERED, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._until: OrderedDict[TemplateKey, float] = OrderedDict()

    def __contains__(self, key: TemplateKey) -> bool:
        until = self._until.get(key)
        return until is not None and until > self._clock()

    def add(self, key: TemplateKey) -> None:
        if self._ttl <= 0:
            return
        with self._lock:
            self._until[key] = self._clock() + self._ttl
            self._until.move_to_end(key)
            while len(self._until) > self._max:
                self._until.popitem(last=False)


def _noop_error(operation: str, reason: str) -> None:
    return None


class TemplateEnsurer:
    def __init__(
        self,
        api: ResourceApi,
        *,
        timeout: float,
        cache_seconds: float,
        on_created: Callable[[], None] = lambda: None,
        on_api_error: Callable[[str, str], None] = _noop_error,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._timeout = timeout
        self._clock = clock
        self._known = RememberedTemplates(cache_seconds, clock=clock)
        self._on_created = on_created
        self._on_api_error = on_api_error

    def ensure(self, templates: Sequence[dict[str, Any]], *, create: bool) -> list[str]:
        """Names of the templates created. With `create=False` (dry run) only existing ones are checked.

        Raises TemplateConflictError, or ApiError when the API cannot give an answer in time.
        """
        budget = Budget(self._timeout, clock=self._clock)
        created: list[str] = []
        for template in templates:
            try:
                if self._ensure_one(template, create, budget):
                    created.append(template["metadata"]["name"])
            except ApiError as exc:
                self._on_api_error(exc.operation, exc.reason)
                raise
        return created

    def _ensure_one(self, template: dict[str, Any], create: bool, budget: Budget) -> bool:
        api_version = template["apiVersion"]
        namespace = template["metadata"]["namespace"]
        name = template["metadata"]["name"]
        key = (api_version, namespace, name)
        if key in self._known:
            return False
        existing = self._api.get_template(api_version, namespace, name, budget.timeout("get_template"))
        made = False
        if existing is None:
            if not create:
                return False
            try:
                self._api.create_template(template, budget.timeout("create_template"))
                made = True
                self._on_created()
            except AlreadyExistsError:
                # Lost a race with another replica or worker: compare with the winner's copy.
                existing = self._api.get_template(api_version, namespace, name, budget.timeout("get_template"))
                if existing is None:
                    raise ApiError(
                        "get_template", "vanished", f"{namespace}/{name} was deleted while being created"
                    ) from None
        if existing is not None and not spec_matches(existing, template):
            raise TemplateConflictError(namespace, name)
        self._known.add(key)
        return made
