"""Make sure the ResourceClaimTemplates a converted Pod references exist with the content it needs.

Templates, never ResourceClaims: a claim made at admission has no owner (the pod has no UID
yet) and outlives the pod; the resourceclaim controller owns claims made from a template.
Templates no pod references any more are deleted by the collector (webhook/collector.py).

Answers come from a watched copy of the templates dra-migrate made (those with its managed-by
label: webhook/cluster.py), so the common path makes no API call and a deleted template is
created again for the next pod. While the copy is not current (start-up, a broken watch) the
API is asked directly.

A template is used only when it is dra-migrate's (the label), not marked unused by the collector,
and its whole content matches: the
claim spec and the labels and annotations of `spec.metadata`, which the resourceclaim controller
copies onto every claim made from it. A template under the wanted name with other content (a
tenant's, or one replaced by hand) is left alone and the next name of a short, fixed sequence
is used (`<name>-2`, `<name>-3`, ...): every replica walks the same sequence, so they agree. A
name found taken by a direct read is remembered for a few seconds, so a burst of pods does not
become a burst of API calls; only when every name of the sequence is taken is the pod refused.

The number of templates dra-migrate creates in one namespace is bounded
(`webhook.maxTemplatesPerNamespace`): the webhook runs before the apiserver validates the
pod, so a user who may create pods, but not templates, could otherwise make it create any
number of distinct templates with pods that fail validation afterwards. The bound holds under
concurrency: the reviews of one worker create in a namespace one at a time, each after counting
with a read from the API (the watched copy may be a moment behind another replica's creations),
so replicas x workers creations at most can pass the same count.

A dry run (`dryRun: All`, e.g. `kubectl apply --server-side --dry-run=server`, Argo CD's diff) goes
the same way, with the create sent as a dry run too: the apiserver's own admission (a
ResourceQuota on `count/resourceclaimtemplates.resource.k8s.io`) and the namespace's bound refuse
it exactly as they would refuse the real create, and nothing is stored.
"""

from __future__ import annotations

import enum
import hashlib
import json
import sys
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
from dra_migrate.webhook.watchcache import ClusterCopy

# How long a name found taken by asking the API directly is remembered (the watched copy needs no memory).
CONFLICT_SECONDS = 5.0
MAX_REMEMBERED_CONFLICTS = 1_000
MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
UNUSED_ANNOTATION = "dra-migrate.io/unused-since"  # set by the collector on a template no pod uses


# The names tried for one template: its own, then `-2` ... (a template the pod cannot use holds the name).
NAME_CANDIDATES = 4


@dataclass(frozen=True, slots=True)
class TemplateRecord:
    """What the watched copy keeps of one of dra-migrate's templates: enough to compare it."""

    uid: str
    content_key: str
    unused: bool = False  # marked by the collector (webhook/collector.py): never used again


def content_key(template: Mapping[str, Any]) -> str:
    """What a claim made from the template gets: its claim spec (request defaults applied) and the
    labels and annotations of `spec.metadata`. Equal keys, same claims. A SHA-256 digest of their
    canonical JSON: the watched copy keeps one per template, and a spec with many CEL selectors is
    kilobytes long."""
    outer = template.get("spec")
    claim_metadata = outer.get("metadata") if isinstance(outer, Mapping) else None
    claim_metadata = claim_metadata if isinstance(claim_metadata, Mapping) else {}
    reaching = {field: claim_metadata.get(field) or {} for field in ("labels", "annotations")}
    content = f"{spec_key(dict(template))}|{json.dumps(reaching, sort_keys=True, default=str)}"
    return hashlib.sha256(content.encode()).hexdigest()


def is_managed(obj: Mapping[str, Any]) -> bool:
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return isinstance(labels, Mapping) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE


def template_record(obj: Mapping[str, Any]) -> TemplateRecord:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    annotations = metadata.get("annotations")
    unused = isinstance(annotations, Mapping) and UNUSED_ANNOTATION in annotations
    # Interned: the templates of one shape (the same mapping and count in many namespaces) share one key.
    return TemplateRecord(str(metadata.get("uid") or ""), sys.intern(content_key(obj)), unused)


def candidate_names(name: str) -> list[str]:
    return [name, *(f"{name}-{number}" for number in range(2, NAME_CANDIDATES + 1))]


@dataclass(frozen=True, slots=True)
class EnsuredTemplates:
    """Templates created (none in a dry run), and the engine's names the pod must use another name for."""

    created: list[str]
    renamed: dict[str, str]


class TemplateConflictError(Exception):
    """Every name the template may have is held by a template the pod cannot use: never reuse one silently."""

    def __init__(self, namespace: str, name: str) -> None:
        names = ", ".join(candidate_names(name))
        super().__init__(
            f'ResourceClaimTemplate "{namespace}/{name}" and every other name dra-migrate may give it '
            f"({names}) already exist with a different spec or claim metadata, or are not dra-migrate's; "
            "dra-migrate does not reuse or change them. Delete one (it is recreated with the right content "
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
        cache: Callable[[], ClusterCopy[TemplateRecord] | None] = lambda: None,
        *,
        max_per_namespace: int = 64,
        on_created: Callable[[], None] = lambda: None,
        on_api_error: Callable[[str, str], None] = _noop_error,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._cache = cache
        self._max = max_per_namespace
        self._taken = _Conflicts(clock)
        self._on_created = on_created
        self._on_api_error = on_api_error
        self._creation_locks = KeyedLocks()
        self._creations = 0  # templates this ensurer has created: what tells a waiting review to look again

    def ensure(self, templates: Sequence[dict[str, Any]], *, dry_run: bool, budget: Budget) -> EnsuredTemplates:
        """Make each template exist (under its name or the next free one); in a dry run, only check
        that the creates would pass, with creates sent as dry runs.

        Raises TemplateConflictError, TemplateLimitError, or ApiError when the API gives no usable answer.
        """
        created: list[str] = []
        renamed: dict[str, str] = {}
        for template in templates:
            wanted = template["metadata"]["name"]
            try:
                name, made = self._ensure_one(template, dry_run, budget)
            except ApiError as exc:
                self._on_api_error(exc.operation, exc.reason)
                raise
            if made and not dry_run:
                created.append(name)
            if name != wanted:
                renamed[wanted] = name
        return EnsuredTemplates(created, renamed)

    def _current(self, resource: ApiResource) -> ClusterCopy[TemplateRecord] | None:
        """The watched copy, when it is current and of the version asked for."""
        cache = self._cache()
        return cache if cache is not None and cache.synced and cache.resource == resource else None

    def _ensure_one(self, template: dict[str, Any], dry_run: bool, budget: Budget) -> tuple[str, bool]:
        """The name the pod uses, and whether it was created now."""
        namespace = template["metadata"]["namespace"]
        first = template["metadata"]["name"]
        wanted = content_key(template)
        resource = claim_templates(_version(template))
        for name in candidate_names(first):
            if (namespace, name, wanted) in self._taken:
                continue
            candidate = {**template, "metadata": {**template["metadata"], "name": name}}
            found = self._ensure_named(resource, candidate, wanted, dry_run, budget)
            if found is not Found.OTHER:
                return name, found is Found.CREATED
        raise TemplateConflictError(namespace, first)

    def _ensure_named(
        self, resource: ApiResource, template: dict[str, Any], wanted: str, dry_run: bool, budget: Budget
    ) -> Found:
        namespace, name = template["metadata"]["namespace"], template["metadata"]["name"]
        creations_before = self._creations
        found = self._lookup(resource, namespace, name, wanted, budget)
        if found is not Found.ABSENT:
            return found
        with self._creating_in(namespace, budget):
            # Another review of this worker may have created it while this one waited for its turn:
            # the watched copy shows it; without one, the API is asked again only if this worker has
            # created a template since.
            if self._current(resource) is not None or self._creations != creations_before:
                found = self._lookup(resource, namespace, name, wanted, budget)
                if found is not Found.ABSENT:
                    return found
            if self._at_limit(resource, namespace, budget):
                # Perhaps only because another replica has just created this very template.
                found = self._read(resource, namespace, name, wanted, budget)
                if found is Found.ABSENT:
                    raise TemplateLimitError(namespace, self._max)
                return found
            try:
                created = self._api.create(
                    resource, namespace, template, budget.timeout("create_resourceclaimtemplates"), dry_run=dry_run
                )
            except AlreadyExistsError:
                # Lost a race with another replica, or the name is held by a template that is not
                # dra-migrate's (the watched copy does not hold those): compare.
                found = self._read(resource, namespace, name, wanted, budget)
                if found is Found.ABSENT:
                    raise ApiError(
                        "get_resourceclaimtemplates", "vanished", f"{namespace}/{name} was deleted while being created"
                    ) from None
                return found
            if dry_run:
                return Found.CREATED
            self._creations += 1
            cache = self._current(resource)
            if cache is not None:
                cache.observe(created)  # counted and known at once, before the watch event
        self._on_created()
        return Found.CREATED

    def _lookup(self, resource: ApiResource, namespace: str, name: str, wanted: str, budget: Budget) -> Found:
        """Answered by the watched copy when it is current (ABSENT there may still be a template that
        is not dra-migrate's: the create finds out), else by the API."""
        cache = self._current(resource)
        if cache is None:
            return self._read(resource, namespace, name, wanted, budget)
        record = cache.get(namespace, name)
        if record is None:
            return Found.ABSENT
        return Found.SAME if record.content_key == wanted and not record.unused else Found.OTHER

    def _read(self, resource: ApiResource, namespace: str, name: str, wanted: str, budget: Budget) -> Found:
        """What the API holds under that name (a direct read); a name found taken is remembered briefly."""
        existing = self._api.get(resource, namespace, name, budget.timeout("get_resourceclaimtemplates"))
        if existing is None:
            return Found.ABSENT
        if is_managed(existing) and content_key(existing) == wanted and not template_record(existing).unused:
            return Found.SAME
        self._taken.add((namespace, name, wanted))
        return Found.OTHER

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

    def _at_limit(self, resource: ApiResource, namespace: str, budget: Budget) -> bool:
        """The watched copy already shows the limit reached, or else a read from the API does (it
        includes other replicas' creations the copy may not show yet)."""
        cache = self._current(resource)
        if cache is not None and len(cache.items(namespace)) >= self._max:
            return True
        page = self._api.list_page(
            resource,
            namespace,
            budget.timeout("list_resourceclaimtemplates"),
            label_selector=MANAGED_SELECTOR,
            limit=self._max,
        )
        return len(page.items) >= self._max


class Found(enum.Enum):
    ABSENT = "absent"
    SAME = "same"  # dra-migrate's, with the content wanted: used
    OTHER = "other"  # another template holds the name: the next name is tried
    CREATED = "created"


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
