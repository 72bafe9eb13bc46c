"""Which resource names a Pod asks for (pure helpers for the review and its metrics)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from translator.engine import Config
from translator.engine.mapping import DeviceRequestSpec

_CONTAINER_LISTS = ("initContainers", "containers")


def _requests(pod: Mapping[str, Any] | None) -> Iterator[tuple[str, int, str]]:
    """(container list, index, resource name) for every limits / requests entry."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    if not isinstance(spec, Mapping):
        return
    for field in _CONTAINER_LISTS:
        containers = spec.get(field)
        for index, container in enumerate(containers if isinstance(containers, list) else ()):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            for section in ("limits", "requests"):
                values = resources.get(section)
                if isinstance(values, Mapping):
                    for name in values:
                        yield field, index, str(name)


def requested_resources(pod: Mapping[str, Any] | None) -> set[str]:
    """Names in any container's or init container's resources.limits / resources.requests."""
    return {name for _, _, name in _requests(pod)}


def convertible(names: set[str], config: Config) -> set[str]:
    return {name for name in names if isinstance(config.mappings.resolve(name), DeviceRequestSpec)}


def converted_resources(before: Mapping[str, Any], after: Mapping[str, Any] | None, config: Config) -> list[str]:
    """Mapped names the conversion took out of at least one container (sorted)."""
    gone = set(_requests(before)) - set(_requests(after))
    return sorted(convertible({name for _, _, name in gone}, config))
