"""DeviceClasses that already serve a device-plugin resource name through DRA (KEP-5004).

A DeviceClass with `spec.extendedResourceName: nvidia.com/gpu` lets the scheduler satisfy
`nvidia.com/gpu: 2` from DRA without any pod change, where the release has DRAExtendedResource
on. The webhook hands these classes to the engine, whose migration strategy (`strategy:`
auto | claims | extendedResource) then decides per pod what to rewrite, exactly as the
translator does with the classes it knows. The quota check uses them too: with the gate on,
claims of such a class are also charged to `requests.<name>` (webhook/quota.py).

The classes come from a watched copy (webhook/watchcache.py): admission never waits for
the API (except briefly for the very first list of a fresh worker), and a broken watch keeps
the last answer and never fails admission.

Deprecated: `webhook.extendedResourceClasses: skip` still leaves every name a class serves
to the scheduler, whatever the strategy and release; `warn` no longer does anything (the
engine's migration-path finding says which path a name took and why).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from dra_migrate.engine import Config, ServingClass, leave_unconverted, serving_classes
from dra_migrate.webhook.watchcache import ClusterCopy

# How long the first review of a fresh worker waits for the first list; with the review's own
# API budget (2 x apiTimeoutSeconds = 4 s by default) it stays inside the webhook's 5 s timeout.
FIRST_LIST_WAIT_SECONDS = 0.5

ClassesByResource = Mapping[str, tuple[str, ...]]
ServingRecord = dict[str, Any]  # a DeviceClass trimmed to what serving_classes() reads


def serving_record(obj: Mapping[str, Any]) -> ServingRecord | None:
    """What the watched copy keeps of a DeviceClass: only classes with an extendedResourceName,
    trimmed to name, creation time, the name served, selectors and config."""
    spec = obj.get("spec")
    metadata = obj.get("metadata")
    if not isinstance(spec, Mapping) or not isinstance(metadata, Mapping):
        return None
    resource = spec.get("extendedResourceName")
    if not isinstance(resource, str) or not resource:
        return None
    return {
        "metadata": {"name": metadata.get("name"), "creationTimestamp": metadata.get("creationTimestamp")},
        "spec": {k: spec[k] for k in ("extendedResourceName", "selectors", "config") if k in spec},
    }


def skip_reason(resource: str, classes: tuple[str, ...]) -> str:
    return (
        f"DeviceClass {', '.join(classes)} serves {resource} through spec.extendedResourceName (KEP-5004); "
        "left to the scheduler (webhook.extendedResourceClasses: skip)"
    )


def without_resources(config: Config, served: ClassesByResource) -> Config:
    """`config` with the `served` names kept as they are, so the engine keeps and reports them."""
    return leave_unconverted(config, {name: skip_reason(name, classes) for name, classes in served.items()})


class ExtendedResourceIndex:
    """The cluster's classes that serve extended resource names, from a watched copy.

    Recomputed only when the copy changed. A fresh worker's first review waits briefly for
    the first list; without one (no copy, the API unreachable) no name is served.
    """

    def __init__(
        self,
        cache: Callable[[], ClusterCopy[ServingRecord | None] | None],
        *,
        first_wait: float = FIRST_LIST_WAIT_SECONDS,
    ) -> None:
        self._cache = cache
        self._first_wait = first_wait
        self._waited = False
        self._lock = threading.Lock()
        self._generation: tuple[int, int] = (-1, -1)
        self._serving: dict[str, ServingClass] = {}
        self._by_resource: dict[str, tuple[str, ...]] = {}
        self._by_class: dict[str, str] = {}

    @property
    def generation(self) -> tuple[int, int]:
        """Changes whenever the answers below change."""
        self._refresh()
        return self._generation

    def serving(self) -> Mapping[str, ServingClass]:
        """extendedResourceName -> the DeviceClass the scheduler uses for it (the newest, then by name)."""
        self._refresh()
        return self._serving

    def current(self) -> ClassesByResource:
        """extendedResourceName -> every DeviceClass that names it."""
        self._refresh()
        return self._by_resource

    def extended_names(self) -> Mapping[str, str]:
        """DeviceClass -> the extendedResourceName it serves."""
        self._refresh()
        return self._by_class

    def _refresh(self) -> None:
        cache = self._cache()
        if cache is None:
            return
        if not self._waited:
            cache.wait_synced(self._first_wait)
            self._waited = True
        generation = (id(cache), cache.generation)
        if generation == self._generation:
            return
        with self._lock:
            records = [item for item in cache.items() if item is not None]
            ordered = serving_classes(records)
            self._serving = {resource: classes[0] for resource, classes in ordered.items()}
            self._by_resource = {
                resource: tuple(sorted(c.name for c in classes)) for resource, classes in ordered.items()
            }
            self._by_class = {c.name: resource for resource, classes in ordered.items() for c in classes}
            self._generation = generation
