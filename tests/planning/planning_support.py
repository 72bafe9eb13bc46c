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


def cluster_state(*objects: dict[str, Any], server_version: str) -> ClusterState:
    state = ClusterState(server_version=server_version, api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add(objects)
    return state
