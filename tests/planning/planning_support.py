"""Helpers for the planning tests: a Node as the API returns it, and a ClusterState holding objects."""

from __future__ import annotations

from typing import Any

from dra_migrate.cluster.state import ClusterState


def api_node(name: str, labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": allocatable},
    }


def device_class(name: str, driver: str, extended: str | None = None) -> dict[str, Any]:
    """A DeviceClass selecting `driver`'s devices, mapping the extended resource `extended` when given."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def cluster_state(*objects: dict[str, Any], server_version: str) -> ClusterState:
    state = ClusterState(server_version=server_version, api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add(objects)
    return state
