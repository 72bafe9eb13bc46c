"""The objects of a cluster that decide a migration, by kind, with the server's version and API versions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Kinds read from a cluster, as (kind, group, resource, namespaced). Secrets are never read; ConfigMaps
# only where a device plugin or Kueue names them (cluster.live).
KINDS: tuple[tuple[str, str, str, bool], ...] = (
    ("Node", "", "nodes", False),
    ("Pod", "", "pods", True),
    ("ResourceQuota", "", "resourcequotas", True),
    ("LimitRange", "", "limitranges", True),
    ("DaemonSet", "apps", "daemonsets", True),
    ("Deployment", "apps", "deployments", True),
    ("StatefulSet", "apps", "statefulsets", True),
    ("ReplicaSet", "apps", "replicasets", True),
    ("Job", "batch", "jobs", True),
    ("CronJob", "batch", "cronjobs", True),
    ("PodDisruptionBudget", "policy", "poddisruptionbudgets", True),
    ("DeviceClass", "resource.k8s.io", "deviceclasses", False),
    ("ResourceSlice", "resource.k8s.io", "resourceslices", False),
    ("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", False),
    ("ClusterPolicy", "nvidia.com", "clusterpolicies", False),
    ("GpuDevicePlugin", "deviceplugin.intel.com", "gpudeviceplugins", False),
    ("DeviceConfig", "amd.com", "deviceconfigs", True),
    ("ClusterQueue", "kueue.x-k8s.io", "clusterqueues", False),
    ("ResourceFlavor", "kueue.x-k8s.io", "resourceflavors", False),
)


def _workload_kinds() -> tuple[tuple[str, str, str, bool], ...]:
    """Every other kind convert knows the pod templates of (PyTorchJob, RayCluster, JobSet, ...), by its
    plural resource name (the CRDs' own: the lower-case kind with an s)."""
    from dra_migrate.engine.workloads import BUILTIN_WORKLOADS

    known = {(group, kind) for kind, group, *_ in KINDS}
    skipped = {("", "Pod"), ("", "PodTemplate"), ("", "ReplicationController")}
    return tuple(
        (w.kind, w.api_group, w.kind.lower() + "s", True)
        for w in BUILTIN_WORKLOADS
        if w.api_group and (w.api_group, w.kind) not in known | skipped and w.pod_spec_paths
    )


KINDS += _workload_kinds()
KIND_NAMES = frozenset(kind for kind, *_ in KINDS) | {"ConfigMap"}


@dataclass
class ClusterState:
    server_version: str | None = None  # gitVersion, "v1.36.2"
    api_versions: set[str] = field(default_factory=set)  # "group/version" ("v1" for the core group)
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    source: str = ""  # where it was read from, for the report

    def add(self, objects: Iterable[Any]) -> None:
        for obj in objects:
            if isinstance(obj, dict) and obj.get("kind") in KIND_NAMES:
                self.objects.setdefault(str(obj["kind"]), []).append(obj)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return self.objects.get(kind, [])

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        for obj in self.of("ConfigMap"):
            metadata = obj.get("metadata") or {}
            if metadata.get("name") == name and (metadata.get("namespace") or "") == namespace:
                return obj
        return None

    def serves(self, group_version: str) -> bool:
        return group_version in self.api_versions

    @property
    def minor_release(self) -> str | None:
        """ "1.36" from the server's gitVersion."""
        if not self.server_version:
            return None
        parts = self.server_version.lstrip("v").split(".")
        return f"{parts[0]}.{parts[1]}" if len(parts) >= 2 and parts[0].isdigit() else None


def name_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def namespace_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def allocatable_of(node: dict[str, Any]) -> dict[str, Any]:
    """A Node's `status.allocatable` ({} when it has none)."""
    allocatable = (node.get("status") or {}).get("allocatable")
    return allocatable if isinstance(allocatable, dict) else {}
