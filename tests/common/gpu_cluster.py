"""A GPU cluster's state as objects (the same ones a snapshot directory holds and the e2e test creates in a
real apiserver): three pools and a node served both ways.

- pool `shared`: 2 nodes, the NVIDIA device plugin with time-slicing (4 replicas, renameByDefault
  false) picked by the node label `nvidia.com/device-plugin.config: shared`: `nvidia.com/gpu` 8 each,
  2 physical GPUs;
- pool `whole`: 2 nodes, the device plugin without sharing (the ConfigMap's `default` key): 4 GPUs each;
- pool `dra`: 2 nodes with a DRA driver's ResourceSlices (`gpu.nvidia.com`, 4 devices each) and a
  DeviceClass `gpu.nvidia.com`;
- node `both-0` (pool `mixed`): device-plugin capacity and a ResourceSlice for the same driver.

Workloads: `trainer` (2 GPUs, nodeSelector pool=whole), `notebook` (1 GPU, nodeSelector pool=shared:
a share), `anywhere` (1 GPU, no selector: could land on the shared pool), `mig` (a MIG profile),
`inference` (2 GPUs, nodeSelector pool=dra). Every node carries the taint TAINT, which the workloads
tolerate, so that other pods in a shared test cluster do not land on them; the device plugin's
DaemonSet selects no node (there is no kubelet).
"""

from __future__ import annotations

from typing import Any

POOL = "example.com/pool"
TAINT = {"key": "example.com/plan-e2e", "value": "true", "effect": "NoSchedule"}
DRIVER = "gpu.nvidia.com"

SHARED_CONFIG = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""
DEFAULT_CONFIG = "version: v1\nflags:\n  migStrategy: none\n"


def _node(name: str, pool: str, allocatable: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {POOL: pool, "kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": [TAINT]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}],
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", **allocatable},
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", **allocatable},
        },
    }


def _slice(node: str, devices: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(devices)],
        },
    }


def _deployment(
    name: str, gpus: int, selector: dict[str, str] | None, resource: str = "nvidia.com/gpu"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {resource: gpus}}}
        ],
        "tolerations": [{"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
    }
    if selector:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def nodes() -> list[dict[str, Any]]:
    shared = {
        "nvidia.com/device-plugin.config": "shared",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    return [
        _node("shared-0", "shared", {"nvidia.com/gpu": "8"}, shared),
        _node("shared-1", "shared", {"nvidia.com/gpu": "8"}, shared),
        _node("whole-0", "whole", {"nvidia.com/gpu": "4"}),
        _node("whole-1", "whole", {"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "2"}),
        _node("dra-0", "dra", {}),
        _node("dra-1", "dra", {}),
        _node("both-0", "mixed", {"nvidia.com/gpu": "2"}),
    ]


def cluster_objects() -> list[dict[str, Any]]:
    """Everything but the Nodes' status (which an apiserver sets through the status subresource)."""
    plugin = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin", "namespace": "nvidia"},
        "spec": {
            "selector": {"matchLabels": {"app": "nvidia-device-plugin"}},
            "template": {
                "metadata": {"labels": {"app": "nvidia-device-plugin"}},
                "spec": {
                    "nodeSelector": {"example.com/device-plugin": "true"},
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
                            "env": [{"name": "DEFAULT_CONFIG", "value": "default"}],
                        }
                    ],
                    "volumes": [{"name": "available-configs", "configMap": {"name": "device-plugin-configs"}}],
                },
            },
        },
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "device-plugin-configs", "namespace": "nvidia"},
        "data": {"default": DEFAULT_CONFIG, "shared": SHARED_CONFIG},
    }
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "ml"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "8"}},
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        plugin,
        config_map,
        device_class,
        *(_slice(n, 4) for n in ("dra-0", "dra-1")),
        _slice("both-0", 2),
        quota,
        _deployment("trainer", 2, {POOL: "whole"}),
        _deployment("notebook", 1, {POOL: "shared"}),
        _deployment("anywhere", 1, None),
        _deployment("mig", 1, {POOL: "whole"}, "nvidia.com/mig-1g.10gb"),
        _deployment("inference", 2, {POOL: "dra"}),
    ]


def snapshot_objects(server_version: str = "v1.36.3") -> tuple[list[dict[str, Any]], str]:
    return [*nodes(), *cluster_objects()], server_version
