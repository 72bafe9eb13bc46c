"""DeviceClasses that already serve a device-plugin resource name through DRA (KEP-5004).

A DeviceClass with `spec.extendedResourceName: nvidia.com/gpu` lets the scheduler satisfy
`nvidia.com/gpu: 2` from DRA without any pod change. Converting such a resource as well is
not wrong, but the user should know; with `extendedResourceClasses: skip` the webhook leaves
those names to the scheduler.

The classes come from a watched copy (webhook/watchcache.py): admission never waits for
the API (except briefly for the very first list of a fresh worker), and a broken watch keeps
the last answer and never fails admission.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from dra_migrate.engine import Config, leave_unconverted
from dra_migrate.webhook.watchcache import WatchCache

# How long the first review of a fresh worker waits for the first list; with the review's own
# API budget (2 x apiTimeoutSeconds = 4 s by default) it stays inside the webhook's 5 s timeout.
FIRST_LIST_WAIT_SECONDS = 0.5

ClassesByResource = Mapping[str, tuple[str, ...]]
ServedName = tuple[str, str]  # (DeviceClass name, extendedResourceName)


def classes_by_resource(device_classes: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """extendedResourceName -> names of the DeviceClasses that set it (sorted)."""
    found: dict[str, list[str]] = {}
    for device_class in device_classes:
        spec = device_class.get("spec")
        resource = spec.get("extendedResourceName") if isinstance(spec, dict) else None
        name = (device_class.get("metadata") or {}).get("name")
        if isinstance(resource, str) and resource and isinstance(name, str):
            found.setdefault(resource, []).append(name)
    return {resource: tuple(sorted(names)) for resource, names in found.items()}


def skip_reason(resource: str, classes: tuple[str, ...]) -> str:
    return (
        f"DeviceClass {', '.join(classes)} serves {resource} through spec.extendedResourceName (KEP-5004); "
        "left to the scheduler (webhook.extendedResourceClasses: skip)"
    )


def without_resources(config: Config, served: ClassesByResource) -> Config:
    """`config` with the `served` names kept as they are, so the engine keeps and reports them."""
    return leave_unconverted(config, {name: skip_reason(name, classes) for name, classes in served.items()})


class ExtendedResourceIndex:
    """The cluster's `classes_by_resource`, from a watched copy of its DeviceClasses.

    Recomputed only when the copy changed. A fresh worker's first review waits briefly for
    the first list; without one (no copy, the API unreachable) no name is served.
    """

    def __init__(
        self, cache: WatchCache[ServedName | None] | None, *, first_wait: float = FIRST_LIST_WAIT_SECONDS
    ) -> None:
        self._cache = cache
        self._first_wait = first_wait
        self._waited = False
        self._lock = threading.Lock()
        self._generation = -1
        self._by_resource: dict[str, tuple[str, ...]] = {}
        self._by_class: dict[str, str] = {}

    def current(self) -> ClassesByResource:
        """extendedResourceName -> DeviceClasses that serve it."""
        self._refresh()
        return self._by_resource

    def extended_names(self) -> Mapping[str, str]:
        """DeviceClass -> the extendedResourceName it serves."""
        self._refresh()
        return self._by_class

    def _refresh(self) -> None:
        cache = self._cache
        if cache is None:
            return
        if not self._waited:
            cache.wait_synced(self._first_wait)
            self._waited = True
        if cache.generation == self._generation:
            return
        with self._lock:
            generation = cache.generation
            self._by_class = dict(item for item in cache.items() if item is not None)
            found: dict[str, list[str]] = {}
            for name, resource in self._by_class.items():
                found.setdefault(resource, []).append(name)
            self._by_resource = {resource: tuple(sorted(names)) for resource, names in found.items()}
            self._generation = generation


def served_name(obj: Mapping[str, Any]) -> ServedName | None:
    """What the watched copy keeps of a DeviceClass: (name, extendedResourceName), or None without one."""
    spec = obj.get("spec")
    metadata = obj.get("metadata")
    resource = spec.get("extendedResourceName") if isinstance(spec, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if isinstance(resource, str) and resource and isinstance(name, str):
        return name, resource
    return None
