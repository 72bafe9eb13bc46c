"""A local copy of one resource type, kept current by list + watch (what client-go calls a reflector).

Each gunicorn worker runs one thread per cache: list everything, then watch from the list's
resourceVersion; a watch the server ends normally is resumed from the last resourceVersion
seen (bookmarks included), an expired one (410) is answered by a fresh list, and any other
failure by a fresh list after a growing pause.

`synced` is true only while the copy is known to be current: from the end of a successful
list until a watch fails, and never longer than WATCH_SILENCE_SECONDS (15 s) after the last sign
of life (an event, a bookmark, the server's end of a watch, a list). Watches are asked to end
within 10 s, so a longer silence means a connection that stopped forwarding (nothing reports it):
the answers go to the API at once, and the watch is dropped (its read timeout is the same bound)
and the copy listed again; `silence` says how long it has been (the watch-staleness metrics).
While it is false the callers ask the API directly, so a deleted or replaced object is never
trusted from a copy that may have missed the change. Every replica and
worker watches the same API, so they all converge on the same answers.

Only what `keep` returns is stored (a few fields), and with a `label_selector` only the objects it
selects are listed and watched (the apiserver filters them), so a copy grows with what the webhook
itself made, not with what others do in the cluster.

Where the kept forms live is the copy's `storage`: a dict in this process (MemoryStorage), or the
file the processes of one `serve` share (webhook/sharedcopy.py), written by its watcher process
and read by its workers.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from dra_migrate.webhook.resource_api import (
    WATCH_JITTER,
    WATCH_SECONDS,
    WATCH_SILENCE_SECONDS,
    ApiError,
    ApiResource,
    GoneError,
    ResourceApi,
    list_pages,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_MIN_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class CopyState:
    """What readers of a copy need besides its objects: whether it is current, and since when."""

    synced: bool
    alive: float  # time.monotonic() of the last sign of life (the same clock in every process of a host)
    generation: int
    seen_version: int


class Storage(Protocol[T]):
    """Where a copy's kept forms live. Each change is made together with the copy's state after it,
    in one step for other processes that read the storage; the WatchCache calls these under its lock."""

    def replace(self, fresh: dict[str, dict[str, T]], state: CopyState) -> None: ...

    def put(self, namespace: str, name: str, value: T, state: CopyState) -> None: ...

    def delete(self, namespace: str, name: str, state: CopyState) -> None: ...

    def publish(self, state: CopyState) -> None: ...

    def contains(self, namespace: str, name: str) -> bool: ...

    def get(self, namespace: str, name: str) -> T | None: ...

    def items(self, namespace: str | None) -> list[T]: ...


class ClusterCopy(Protocol[T]):
    """What the reviews read of a copy: a WatchCache of this process, or a worker's view of the
    copy the processes of one `serve` share (webhook/sharedcopy.py)."""

    @property
    def resource(self) -> ApiResource: ...

    @property
    def synced(self) -> bool: ...

    @property
    def silence(self) -> float: ...

    @property
    def generation(self) -> int: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def wait_synced(self, timeout: float) -> bool: ...

    def get(self, namespace: str | None, name: str) -> T | None: ...

    def items(self, namespace: str | None = None) -> list[T]: ...

    def observe(self, obj: Mapping[str, Any]) -> None: ...


class MemoryStorage(Generic[T]):
    """The kept forms in a dict of this process."""

    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[str, T]] = {}

    def replace(self, fresh: dict[str, dict[str, T]], state: CopyState) -> None:
        self._by_namespace = fresh

    def put(self, namespace: str, name: str, value: T, state: CopyState) -> None:
        self._by_namespace.setdefault(namespace, {})[name] = value

    def delete(self, namespace: str, name: str, state: CopyState) -> None:
        objects = self._by_namespace.get(namespace)
        if objects is not None:
            objects.pop(name, None)
            if not objects:
                del self._by_namespace[namespace]

    def contains(self, namespace: str, name: str) -> bool:
        return name in self._by_namespace.get(namespace, {})

    def get(self, namespace: str, name: str) -> T | None:
        return self._by_namespace.get(namespace, {}).get(name)

    def items(self, namespace: str | None) -> list[T]:
        if namespace is not None:
            return list(self._by_namespace.get(namespace, {}).values())
        return [item for objects in self._by_namespace.values() for item in objects.values()]

    def publish(self, state: CopyState) -> None:
        pass  # readers share this process's WatchCache


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(namespace or "", name, resourceVersion) of an API object."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return (
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
        str(metadata.get("resourceVersion") or ""),
    )


class WatchCache(Generic[T]):
    def __init__(
        self,
        api: ResourceApi,
        resource: ApiResource,
        keep: Callable[[Mapping[str, Any]], T],
        *,
        timeout: float,
        label_selector: str = "",
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
        on_event: Callable[[str, str], None] = lambda resource, kind: None,
        storage: Storage[T] | None = None,
    ) -> None:
        self._api = api
        self._on_event = on_event
        self._resource = resource
        self._keep = keep
        self._timeout = timeout
        self._selector = label_selector
        self._on_api_error = on_api_error
        self._lock = threading.Lock()
        self._storage: Storage[T] = storage if storage is not None else MemoryStorage()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._generation = 0
        self._seen_version = 0  # the newest resourceVersion applied from a list or an event
        self._alive = 0.0  # time.monotonic() of the last sign of life of the list or watch
        self._last_error = ""

    @property
    def resource(self) -> ApiResource:
        return self._resource

    @property
    def synced(self) -> bool:
        # The silence check holds even while the watch thread is still blocked in a read.
        return self._synced.is_set() and time.monotonic() - self._alive < WATCH_SILENCE_SECONDS

    @property
    def silence(self) -> float:
        """Seconds since the last sign of life of the list or watch (infinite before the first list)."""
        if not self._synced.is_set():
            return float("inf")
        return time.monotonic() - self._alive

    @property
    def generation(self) -> int:
        """Changes whenever the copy changes (for callers that derive something from all of it)."""
        return self._generation

    def start(self) -> None:
        """Start the watch thread in this process (call after fork); idempotent."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"watch-{self._resource.plural}", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def get(self, namespace: str | None, name: str) -> T | None:
        """The kept form of one object; meaningful only while `synced`."""
        with self._lock:
            return self._storage.get(namespace or "", name)

    def items(self, namespace: str | None = None) -> list[T]:
        """All kept objects, or those of one namespace."""
        with self._lock:
            return self._storage.items(namespace)

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Take in an object this process just wrote, before its watch event arrives.

        Only when the copy has not yet applied that version: resourceVersions are etcd revisions,
        increasing across the whole cluster, and events arrive in that order, so a copy that has
        seen a newer version already knows about this write (and perhaps a deletion after it).
        """
        namespace, name, version = object_key(obj)
        if not version.isdigit():
            return
        with self._lock:
            if int(version) > self._seen_version and not self._storage.contains(namespace, name):
                self._generation += 1
                self._storage.put(namespace, name, self._keep(obj), self._state())

    def _state(self, synced: bool | None = None) -> CopyState:
        synced = self._synced.is_set() if synced is None else synced
        return CopyState(synced, self._alive, self._generation, self._seen_version)

    def _not_synced(self) -> None:
        self._synced.clear()
        with self._lock:
            try:
                self._storage.publish(self._state())
            except Exception:  # its readers judge the copy by its last sign of life then (15 s)
                log.exception("%s: cannot mark the copy not synced", self._resource.plural)

    def _saw(self, version: str) -> None:
        if version.isdigit():
            self._seen_version = max(self._seen_version, int(version))

    # --- the thread ---

    def _run(self) -> None:
        failures = 0
        gone = 0  # watches ended by 410 right after a relist, in a row
        while not self._stop.is_set():
            try:
                resource_version = self._relist()
                failures = 0
                while not self._stop.is_set():
                    resource_version = self._watch(resource_version)
                    gone = 0
            except GoneError:
                self._not_synced()  # relist at once: the watch window moved on
                gone += 1
                if gone > 1:  # again, straight after a relist: something answers 410 to everything
                    self._stop.wait(self._pause(gone - 1))
            except ApiError as exc:
                self._not_synced()
                self._failed(exc)
                failures += 1
                # a server that says how long to wait (429, 503) is believed, within the usual bound
                self._stop.wait(max(self._pause(failures), min(exc.retry_after or 0.0, RETRY_MAX_SECONDS)))
            except Exception:
                self._not_synced()
                log.exception("unexpected error in the %s watch", self._resource.plural)
                failures += 1
                self._stop.wait(self._pause(failures))

    @staticmethod
    def _pause(failures: int) -> float:
        base = min(RETRY_MAX_SECONDS, RETRY_MIN_SECONDS * 2.0 ** min(failures - 1, 10))
        return base * random.uniform(0.8, 1.2)

    def _failed(self, exc: ApiError) -> None:
        self._on_api_error(exc.operation, exc.reason)
        if exc.detail != self._last_error:
            log.warning(
                "%s: cannot list or watch (answers use the API directly): %s", self._resource.plural, exc.detail
            )
        self._last_error = exc.detail

    def _relist(self) -> str:
        fresh: dict[str, dict[str, T]] = {}
        resource_version = ""
        # Kept page by page: a worker never holds the whole list's objects at once (their peak
        # would stay in its resident memory long after the list).
        for page in list_pages(self._api, self._resource, None, self._timeout, label_selector=self._selector):
            resource_version = resource_version or page.resource_version
            for obj in page.items:
                namespace, name, _ = object_key(obj)
                fresh.setdefault(namespace, {})[name] = self._keep(obj)
        with self._lock:
            self._generation += 1
            self._seen_version = 0
            self._saw(resource_version)
            self._alive = time.monotonic()
            self._storage.replace(fresh, self._state(synced=True))
            self._synced.set()  # once the storage's readers can see it too
        if self._last_error:
            log.info("%s: watching again", self._resource.plural)
            self._last_error = ""
        return resource_version

    def _watch(self, resource_version: str) -> str:
        """Apply events until the server ends the watch; returns the resourceVersion to resume from."""
        seconds = int(WATCH_SECONDS * random.uniform(1.0, WATCH_JITTER))
        started = time.monotonic()
        for kind, obj in self._api.watch(self._resource, resource_version, seconds, label_selector=self._selector):
            self._alive = time.monotonic()
            namespace, name, version = object_key(obj)
            resource_version = version or resource_version
            if kind == "BOOKMARK":
                with self._lock:
                    self._saw(version)
                    self._storage.publish(self._state())
                continue
            kept = None if kind == "DELETED" else self._keep(obj)
            with self._lock:
                self._generation += 1
                self._saw(version)
                if kind == "DELETED":
                    self._storage.delete(namespace, name, self._state())
                else:
                    self._storage.put(namespace, name, kept, self._state())  # type: ignore[arg-type]
            self._on_event(self._resource.plural, kind)
        with self._lock:
            self._alive = time.monotonic()  # the server ended the watch: the connection was alive
            self._storage.publish(self._state())
        if time.monotonic() - started < 1.0:
            self._stop.wait(RETRY_MIN_SECONDS)  # a server ending watches at once must not make us spin
        return resource_version
