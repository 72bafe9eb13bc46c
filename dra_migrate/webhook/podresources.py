"""Which resource names a Pod asks for (pure helpers for the review and its metrics)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_migrate.engine import Config, DeviceRequestSpec, resource_entries


def _requests(pod: Mapping[str, Any] | None) -> Iterator[tuple[str | int, ...]]:
    """(container path..., resource name) for every limits / requests entry."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    for where, _, name in resource_entries(spec):
        yield (*where, name)


def requested_resources(pod: Mapping[str, Any] | None) -> set[str]:
    """Names in any container's or init container's resources.limits / resources.requests."""
    return {str(entry[-1]) for entry in _requests(pod)}


def convertible(names: set[str], config: Config) -> set[str]:
    return {name for name in names if isinstance(config.mappings.resolve(name), DeviceRequestSpec)}


def converted_resources(before: Mapping[str, Any], after: Mapping[str, Any] | None, config: Config) -> list[str]:
    """Mapped names the conversion took out of at least one container (sorted)."""
    gone = set(_requests(before)) - set(_requests(after))
    return sorted(convertible({str(entry[-1]) for entry in gone}, config))
