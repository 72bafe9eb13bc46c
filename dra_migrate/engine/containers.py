"""Where a pod spec lists its containers: one enumeration for every part that reads them (the
engine's checks, triggers and conversion, the webhook's checks and match condition, the translator's
device view).

Ephemeral containers may not set `resources` (core/v1 EphemeralContainer: "Resources are not allowed
for ephemeral containers", enforced by the API's validation, and they cannot be set when a pod is
created), so they never carry a device request: REQUESTING_CONTAINERS are where devices are asked
for and converted; ALL_CONTAINERS is every container, read where a field an ephemeral container may
carry matters (an environment variable's reference to a claim) and where a review's size is bounded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

REQUESTING_CONTAINERS = ("initContainers", "containers")
ALL_CONTAINERS = (*REQUESTING_CONTAINERS, "ephemeralContainers")

EMPTY: Mapping[str, Any] = {}


def pod_containers(
    pod_spec: Mapping[str, Any], lists: tuple[str, ...] = ALL_CONTAINERS
) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(list name, index, container) for each container that is a mapping, in the API's order."""
    for kind in lists:
        items = pod_spec.get(kind)
        if isinstance(items, list):
            for index, container in enumerate(items):
                if isinstance(container, dict):
                    yield kind, index, container


def resource_maps(container: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A container's (limits, requests); a missing or malformed section is empty."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return EMPTY, EMPTY
    limits = resources.get("limits")
    requests = resources.get("requests")
    return (limits if isinstance(limits, dict) else EMPTY), (requests if isinstance(requests, dict) else EMPTY)
