"""Make sure the ResourceClaimTemplates a converted Pod references exist with the spec it needs.

Templates, never ResourceClaims: a claim made at admission has no owner (the pod has no UID
yet) and outlives the pod; the resourceclaim controller owns claims made from a template.

Answers come from a watched copy of every ResourceClaimTemplate in the cluster
(webhook/watchcache.py), so the common path makes no API call, a deleted template is
created again for the next pod, and a template replaced with another spec is refused (409)
from the next review on, by every replica alike. While the copy is not current (start-up, a
broken watch) the API is asked directly. A conflict found that way is remembered for a few
seconds, so a burst of pods against one conflicting template does not become a burst of API
calls.

The number of templates dra-migrate creates in one namespace is bounded
(`webhook.maxTemplatesPerNamespace`): the webhook runs before the apiserver validates the
pod, so a user who may create pods, but not templates, could otherwise make it create any
number of distinct templates with pods that fail validation afterwards. The bound holds under
concurrency: the reviews of one worker create in a namespace one at a time, each after counting
with a read from the API (the watched copy may be a moment behind another replica's creations),
so replicas x workers creations at most can pass the same count. A template is never deleted
to restore the bound: another replica may already have admitted a pod that uses it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dra_migrate.engine import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RESOURCE_GROUP, spec_key
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.resource_api import AlreadyExistsError, ApiError, ApiResource, ResourceApi, claim_templates
from dra_migrate.webhook.watchcache import WatchCache

# How long a conflict found by asking the API directly is remembered (the watched copy needs no memory).
CONFLICT_SECONDS = 5.0
MAX_REMEMBERED_CONFLICTS = 1_000
MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"


@dataclass(frozen=True, slots=True)
class TemplateRecord:
    """What the watched copy keeps of a template: enough to compare it and to count ours."""

    uid: str
    spec_key: str
    managed: bool


def template_record(obj: Mapping[str, Any]) -> TemplateRecord:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    labels = metadata.get("labels")
    managed = isinstance(labels, Mapping) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE
    return TemplateRecord(str(metadata.get("uid") or ""), spec_key(dict(obj)), managed)


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


class TemplateLimitError(Exception):
    """Creating one more template would pass webhook.maxTemplatesPerNamespace."""

    def __init__(self, namespace: str, limit: int) -> None:
        super().__init__(
            f"namespace {namespace} already has {limit} ResourceClaimTemplates created by dra-migrate "
            "(webhook.maxTemplatesPerNamespace), and this pod needs another one. Delete the unused ones "
            f"(kubectl get resourceclaimtemplates -n {namespace} -l {MANAGED_SELECTOR}; "
            "a template in use is recreated for the next pod that needs it), or raise the limit"
        )
        self.namespace = namespace
        self.limit = limit


class _Conflicts:
    """Conflicts found by a direct read, each remembered for CONFLICT_SECONDS (thread-safe, bounded)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._until: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    def __contains__(self, key: tuple[str, str, str]) -> bool:
        until = self._until.get(key)
        return until is not None and until > self._clock()

    def add(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            self._until[key] = self._clock() + CONFLICT_SECONDS
            self._until.move_to_end(key)
            while len(self._until) > MAX_REMEMBERED_CONFLICTS:
                self._until.popitem(last=False)


def _noop_error(operation: str, reason: str) -> None:
    return None


class TemplateEnsurer:
    def __init__(
        self,
        api: ResourceApi,
        cache: Callable[[], WatchCache[TemplateRecord] | None] = lambda: None,
        *,
        max_per_namespace: int = 64,
        on_created: Callable[[], None] = lambda: None,
        on_api_error: Callable[[str, str], None] = _noop_error,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._cache = cache
        self._max = max_per_namespace
        self._conflicts = _Conflicts(clock)
        self._on_created = on_created
        self._on_api_error = on_api_error
        self._creation_locks = KeyedLocks()
        self._creations = 0  # templates this ensurer has created: what tells a waiting review to look again

    def ensure(self, templates: Sequence[dict[str, Any]], *, create: bool, budget: Budget) -> list[str]:
        """Names of the templates created. With `create=False` (dry run) nothing is created.

        Raises TemplateConflictError, TemplateLimitError, or ApiError when the API gives no usable answer.
        """
        created: list[str] = []
        for template in templates:
            try:
                if self._ensure_one(template, create, budget):
                    created.append(template["metadata"]["name"])
            except ApiError as exc:
                self._on_api_error(exc.operation, exc.reason)
                raise
        return created

    def _current(self, resource: ApiResource) -> WatchCache[TemplateRecord] | None:
        """The watched copy, when it is current and of the version asked for."""
        cache = self._cache()
        return cache if cache is not None and cache.synced and cache.resource == resource else None

    def _ensure_one(self, template: dict[str, Any], create: bool, budget: Budget) -> bool:
        namespace = template["metadata"]["namespace"]
        name = template["metadata"]["name"]
        wanted = spec_key(template)
        if (namespace, name, wanted) in self._conflicts:
            raise TemplateConflictError(namespace, name)
        resource = claim_templates(_version(template))
        creations_before = self._creations
        if self._exists(resource, namespace, name, wanted, budget) or not create:
            return False
        with self._creating_in(namespace, budget):
            # Another review of this worker may have created it while this one waited for its turn:
            # the watched copy shows it; without one, the API is asked again only if this worker has
            # created a template since.
            look_again = self._current(resource) is not None or self._creations != creations_before
            if look_again and self._exists(resource, namespace, name, wanted, budget):
                return False
            if self._at_limit(resource, namespace, budget):
                # Perhaps only because another replica has just created this very template.
                stored = self._stored_spec(resource, namespace, name, budget)
                if stored is None:
                    raise TemplateLimitError(namespace, self._max)
                return self._compare(stored, wanted, namespace, name, remember=True)
            try:
                created = self._api.create(
                    resource, namespace, template, budget.timeout("create_resourceclaimtemplates")
                )
            except AlreadyExistsError:
                # Lost a race with another replica (or the copy is a moment behind): compare.
                stored = self._stored_spec(resource, namespace, name, budget)
                if stored is None:
                    raise ApiError(
                        "get_resourceclaimtemplates", "vanished", f"{namespace}/{name} was deleted while being created"
                    ) from None
                return self._compare(stored, wanted, namespace, name, remember=True)
            self._creations += 1
            cache = self._current(resource)
            if cache is not None:
                cache.observe(created)  # counted and known at once, before the watch event
        self._on_created()
        return True

    def _exists(self, resource: ApiResource, namespace: str, name: str, wanted: str, budget: Budget) -> bool:
        """True when the template exists with the spec wanted; raises TemplateConflictError for another spec.

        Answered by the watched copy when it is current, else by the API."""
        cache = self._current(resource)
        if cache is not None:
            record = cache.get(namespace, name)
            return record is not None and not self._compare(record.spec_key, wanted, namespace, name, remember=False)
        stored = self._stored_spec(resource, namespace, name, budget)
        return stored is not None and not self._compare(stored, wanted, namespace, name, remember=True)

    def _stored_spec(self, resource: ApiResource, namespace: str, name: str, budget: Budget) -> str | None:
        """The spec key of the template the API holds under that name (a direct read), or None."""
        existing = self._api.get(resource, namespace, name, budget.timeout("get_resourceclaimtemplates"))
        return None if existing is None else spec_key(existing)

    @contextmanager
    def _creating_in(self, namespace: str, budget: Budget) -> Iterator[None]:
        """This worker's only creation in the namespace while it lasts. Waiting for it is waiting for
        the API calls of the creations before (no longer than the review's budget for the API)."""
        with self._creation_locks.holding(namespace, budget.timeout("create_resourceclaimtemplates")) as held:
            if not held:
                raise ApiError(
                    "create_resourceclaimtemplates",
                    "timeout",
                    "the creations before it in the namespace took the review's time",
                )
            yield

    def _compare(self, existing: str, wanted: str, namespace: str, name: str, *, remember: bool) -> bool:
        """False when the specs are the same (nothing created); raises TemplateConflictError otherwise."""
        if existing != wanted:
            if remember:
                self._conflicts.add((namespace, name, wanted))
            raise TemplateConflictError(namespace, name)
        return False

    def _at_limit(self, resource: ApiResource, namespace: str, budget: Budget) -> bool:
        """The watched copy already shows the limit reached, or else a read from the API does (it
        includes other replicas' creations the copy may not show yet)."""
        cache = self._current(resource)
        if cache is not None and sum(1 for record in cache.items(namespace) if record.managed) >= self._max:
            return True
        page = self._api.list_page(
            resource,
            namespace,
            budget.timeout("list_resourceclaimtemplates"),
            label_selector=MANAGED_SELECTOR,
            limit=self._max,
        )
        return len(page.items) >= self._max


class KeyedLocks:
    """One lock per key while anyone holds or waits for it (threading's: gevent's in `serve`)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()

    @contextmanager
    def holding(self, key: str, timeout: float) -> Iterator[bool]:
        """Yields whether the key's lock was acquired within `timeout` seconds."""
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        acquired = lock.acquire(timeout=timeout)
        try:
            yield acquired
        finally:
            if acquired:
                lock.release()
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


def _version(template: Mapping[str, Any]) -> str:
    group, _, version = str(template.get("apiVersion", "")).rpartition("/")
    if group != RESOURCE_GROUP or not version:
        raise ValueError(f"not a {RESOURCE_GROUP} apiVersion: {template.get('apiVersion')!r}")
    return version
