"""Read a live cluster through a kubeconfig: GET requests only (discovery, list, and the ConfigMaps a
device plugin or Kueue names). Secrets are never read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dra_migrate.cluster.state import KINDS, ClusterState, name_of, namespace_of

_PAGE = 500
_TIMEOUT = 30.0


class ClusterReadError(Exception):
    """The cluster could not be read, with what was asked and why."""


class _Reader:
    def __init__(self, kubeconfig: Path | None, context: str | None) -> None:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        configuration = client.Configuration()
        if kubeconfig is not None and not kubeconfig.is_file():
            raise ClusterReadError(f"{kubeconfig}: no such kubeconfig file")
        try:
            if kubeconfig is None and context is None and _in_cluster():
                config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            else:
                config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=str(kubeconfig) if kubeconfig else None,
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                )
        except (ConfigException, OSError, ValueError, TypeError) as exc:
            raise ClusterReadError(f"cannot load the Kubernetes API configuration: {exc}") from None
        configuration.retries = False
        self.api = client.ApiClient(configuration)
        self.host = configuration.host

    def get(self, path: str, query: list[tuple[str, str]] | None = None, missing_ok: bool = False) -> Any:
        try:
            serialized = self.api.param_serialize(
                "GET",
                path,
                query_params=query or [],
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            answer = self.api.call_api(*serialized, _request_timeout=_TIMEOUT)
            data = answer.read()  # type: ignore[no-untyped-call]
        except Exception as exc:  # urllib3, ssl and client errors: the API is not reachable
            raise ClusterReadError(f"GET {self.host}{path}: {type(exc).__name__}: {exc}") from None
        if missing_ok and answer.status in (403, 404):
            return None
        if not 200 <= answer.status <= 299:
            raise ClusterReadError(f"GET {self.host}{path}: HTTP {answer.status}: {data[:300]!r}")
        return json.loads(data or b"null")

    def list(self, path: str) -> Iterator[dict[str, Any]]:
        token = ""
        while True:
            query = [("limit", str(_PAGE))] + ([("continue", token)] if token else [])
            page = self.get(path, query, missing_ok=True)
            if not isinstance(page, dict):
                return
            yield from (i for i in page.get("items") or [] if isinstance(i, dict))
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return


def _in_cluster() -> bool:
    import os

    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and not os.environ.get("KUBECONFIG")


def read_live(kubeconfig: Path | None = None, context: str | None = None) -> ClusterState:
    reader = _Reader(kubeconfig, context)
    version = reader.get("/version")
    state = ClusterState(source=reader.host)
    state.server_version = str(version.get("gitVersion")) if isinstance(version, dict) else None
    preferred = _discover(reader, state)
    for kind, group, resource, _ in KINDS:
        group_version = "v1" if not group else preferred.get(group)
        if group_version is None:
            continue  # not served: nothing of that kind
        prefix = "/api/v1" if not group else f"/apis/{group_version}"
        for item in reader.list(f"{prefix}/{resource}"):
            item.setdefault("apiVersion", group_version)
            item.setdefault("kind", kind)
            state.add([item])
    for namespace, name in _named_config_maps(state):
        found = reader.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}", missing_ok=True)
        if isinstance(found, dict):
            found.setdefault("apiVersion", "v1")
            found.setdefault("kind", "ConfigMap")
            state.add([found])
    return state


def _discover(reader: _Reader, state: ClusterState) -> dict[str, str]:
    """Served group versions (into the state) and each group's preferred version."""
    state.api_versions.add("v1")
    groups = reader.get("/apis")
    preferred: dict[str, str] = {}
    for group in (groups or {}).get("groups") or []:
        for version in group.get("versions") or []:
            state.api_versions.add(str(version.get("groupVersion")))
        chosen = (group.get("preferredVersion") or {}).get("groupVersion")
        if chosen:
            preferred[str(group.get("name"))] = str(chosen)
    return preferred


def _named_config_maps(state: ClusterState) -> set[tuple[str, str]]:
    """ConfigMaps a device plugin or Kueue reads its configuration from (cluster.nvidiaplugin)."""
    from dra_migrate.cluster.nvidiaplugin import config_map_references

    found = set(config_map_references(state))
    for deployment in state.of("Deployment"):
        if name_of(deployment) == "kueue-controller-manager":
            found.add((namespace_of(deployment), "kueue-manager-config"))
    return found
