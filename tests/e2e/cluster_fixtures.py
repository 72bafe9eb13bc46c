"""Fake nodes, a fake DRA driver and small API helpers for e2e scenarios.

There is no kubelet: nodes are plain API objects with a Ready condition, and the
"driver" is the ResourceSlices created here. The real resourceclaim controller
creates claims from templates and the real scheduler allocates devices and binds
pods (spec.nodeName set); pods then stay Pending forever.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client as k8s_client
from kubernetes import dynamic
from kubernetes.dynamic import exceptions as dyn_exc
from polling import DEFAULT_TIMEOUT_S, wait_for

T = TypeVar("T")
Obj = dict[str, Any]

RESOURCE_API = "resource.k8s.io/v1"
NVIDIA_DRIVER = "gpu.nvidia.com"
EXAMPLE_DRIVER = "gpu.example.com"
DEVICE_PLUGIN_RESOURCE = "nvidia.com/gpu"
LABEL_PREFIX = "e2e.dra-migrate.io"
ROLE_LABEL = f"{LABEL_PREFIX}/role"  # dra-nvidia | dra-example | device-plugin
NODE_LABEL = f"{LABEL_PREFIX}/node"  # on ResourceSlices, so a node's slices can be found and removed


# --------------------------------------------------------------------------- polling


# --------------------------------------------------------------------------- API access


class Kube:
    """Dict-in, dict-out access to any kind via the dynamic client.

    Plain dicts keep tests independent of the python client's generated models,
    which may lag or lead the server's schema.
    """

    def __init__(self, api_client: k8s_client.ApiClient, discovery_cache: Path | None = None) -> None:
        self.api_client = api_client
        cache = str(discovery_cache) if discovery_cache is not None else None
        self.dynamic = dynamic.DynamicClient(api_client, cache_file=cache)  # type: ignore[no-untyped-call]

    def resource(self, api_version: str, kind: str) -> Any:
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, manifest: Mapping[str, Any], namespace: str | None = None, **params: Any) -> Obj:
        """Create `manifest`; `params` go to the request (e.g. dry_run="All")."""
        resource = self.resource(manifest["apiVersion"], manifest["kind"])
        namespace = namespace or manifest.get("metadata", {}).get("namespace")
        kwargs = {"namespace": namespace} if resource.namespaced else {}
        return _to_dict(resource.create(body=dict(manifest), **kwargs, **params))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return _to_dict(self.resource(api_version, kind).get(name=name, namespace=namespace))
        except dyn_exc.NotFoundError:
            return None

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        result = self.resource(api_version, kind).get(
            namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        return list(_to_dict(result).get("items") or [])

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Obj:
        """JSON merge patch, optionally on a subresource such as "status"."""
        resource = self.resource(api_version, kind)
        if subresource:
            resource = getattr(resource, subresource)
        return _to_dict(
            resource.patch(
                body=dict(patch), name=name, namespace=namespace, content_type="application/merge-patch+json"
            )
        )

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
    ) -> None:
        """Delete if present; a missing object is not an error."""
        params = {} if grace_period_seconds is None else {"grace_period_seconds": grace_period_seconds}
        with suppress(dyn_exc.NotFoundError):
            self.resource(api_version, kind).delete(name=name, namespace=namespace, **params)


def _to_dict(value: Any) -> Obj:
    result = value.to_dict() if hasattr(value, "to_dict") else value
    assert isinstance(result, dict), f"unexpected API response {result!r}"
    return result


# --------------------------------------------------------------------------- device classes


def device_class(name: str, cel: str) -> Obj:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": cel}}]},
    }


def nvidia_type_selector(device_type: str) -> str:
    return f'device.driver == "{NVIDIA_DRIVER}" && device.attributes["{NVIDIA_DRIVER}"].type == "{device_type}"'


DEVICE_CLASSES: tuple[Obj, ...] = (
    device_class("gpu.nvidia.com", nvidia_type_selector("gpu")),
    device_class("mig.nvidia.com", nvidia_type_selector("mig")),
    device_class("gpu.example.com", f'device.driver == "{EXAMPLE_DRIVER}"'),
)


def ensure_device_classes(kube: Kube, classes: Sequence[Obj] = DEVICE_CLASSES) -> None:
    for manifest in classes:
        if kube.get(RESOURCE_API, "DeviceClass", manifest["metadata"]["name"]) is None:
            kube.create(manifest)


# --------------------------------------------------------------------------- fake nodes


@dataclass(frozen=True)
class GpuModel:
    product_name: str = "NVIDIA A100-SXM4-40GB"
    brand: str = "Nvidia"
    architecture: str = "Ampere"
    cuda_compute_capability: str = "8.0.0"
    driver_version: str = "550.54.15"
    memory: str = "40Gi"


# Default MIG layout of one A100-40GB in MIG mode: memory per profile.
A100_MIG_PROFILES: tuple[tuple[str, str], ...] = (
    ("1g.5gb", "5Gi"),
    ("1g.5gb", "5Gi"),
    ("2g.10gb", "10Gi"),
    ("3g.20gb", "20Gi"),
)


@dataclass(frozen=True)
class FakeNode:
    """A Ready, untainted node. Subclasses add extended resources and ResourceSlices."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu: str = "64"
    memory: str = "512Gi"
    pods: str = "110"
    # A kubelet always reports it; pods that request ephemeral storage need it to fit.
    ephemeral_storage: str = "1Ti"
    role: str = "plain"

    def extended_resources(self) -> dict[str, str]:
        return {}

    def resource_slices(self) -> list[Obj]:
        return []

    def node_manifest(self) -> Obj:
        capacity = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods,
            "ephemeral-storage": self.ephemeral_storage,
            **self.extended_resources(),
        }
        labels = {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux", ROLE_LABEL: self.role}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {**labels, **self.labels}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [ready_condition()]},
        }


@dataclass(frozen=True)
class NvidiaDraNode(FakeNode):
    """Publishes `gpus` full GPUs plus MIG devices of `mig_parents` GPUs in MIG mode.

    MIG parents are extra GPUs (indices after the full ones) that are not offered
    whole, so a scenario can reason about full-GPU and MIG counts independently.
    """

    gpus: int = 8
    mig_parents: int = 1
    mig_profiles: tuple[tuple[str, str], ...] = A100_MIG_PROFILES
    model: GpuModel = field(default_factory=GpuModel)
    separate_mig_pool: bool = False
    role: str = "dra-nvidia"

    @property
    def pool(self) -> str:
        return self.name

    @property
    def mig_pool(self) -> str:
        return f"{self.name}-mig" if self.separate_mig_pool else self.name

    def gpu_uuid(self, index: int) -> str:
        return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.name}.gpu{index}"))

    def gpu_devices(self) -> list[Obj]:
        return [self._gpu_device(index) for index in range(self.gpus)]

    def mig_devices(self) -> list[Obj]:
        devices: list[Obj] = []
        for parent in range(self.gpus, self.gpus + self.mig_parents):
            for slot, (profile, memory) in enumerate(self.mig_profiles):
                devices.append(self._mig_device(parent, slot, profile, memory))
        return devices

    def _gpu_device(self, index: int) -> Obj:
        m = self.model
        return {
            "name": f"gpu-{index}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": self.gpu_uuid(index)},
                "productName": {"string": m.product_name},
                "brand": {"string": m.brand},
                "architecture": {"string": m.architecture},
                "cudaComputeCapability": {"version": m.cuda_compute_capability},
                "driverVersion": {"version": m.driver_version},
                "index": {"int": index},
            },
            "capacity": {"memory": {"value": m.memory}},
        }

    def _mig_device(self, parent: int, slot: int, profile: str, memory: str) -> Obj:
        m = self.model
        return {
            "name": f"gpu-{parent}-mig-{slot}",
            "attributes": {
                "type": {"string": "mig"},
                "profile": {"string": profile},
                "uuid": {"string": "MIG-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.name}.gpu{parent}.{slot}"))},
                "parentUUID": {"string": self.gpu_uuid(parent)},
                "parentIndex": {"int": parent},
                "productName": {"string": m.product_name},
                "brand": {"string": m.brand},
                "architecture": {"string": m.architecture},
                "cudaComputeCapability": {"version": m.cuda_compute_capability},
                "driverVersion": {"version": m.driver_version},
            },
            "capacity": {"memory": {"value": memory}},
        }

    def resource_slices(self) -> list[Obj]:
        if not self.separate_mig_pool:
            return _slices(self.name, NVIDIA_DRIVER, self.pool, "gpus", self.gpu_devices() + self.mig_devices())
        return _slices(self.name, NVIDIA_DRIVER, self.pool, "gpus", self.gpu_devices()) + _slices(
            self.name, NVIDIA_DRIVER, self.mig_pool, "mig", self.mig_devices()
        )


@dataclass(frozen=True)
class ExampleDraNode(FakeNode):
    """Publishes `devices` GPUs of the generic example driver gpu.example.com."""

    devices: int = 8
    device_memory: str = "16Gi"
    role: str = "dra-example"

    def resource_slices(self) -> list[Obj]:
        devices = [
            {
                "name": f"gpu-{index}",
                "attributes": {"model": {"string": "example-gpu"}, "index": {"int": index}},
                "capacity": {"memory": {"value": self.device_memory}},
            }
            for index in range(self.devices)
        ]
        return _slices(self.name, EXAMPLE_DRIVER, self.name, "gpus", devices)


@dataclass(frozen=True)
class DevicePluginNode(FakeNode):
    """A legacy node: `nvidia.com/gpu` in capacity/allocatable, no ResourceSlices."""

    gpus: int = 8
    resource_name: str = DEVICE_PLUGIN_RESOURCE
    role: str = "device-plugin"

    def extended_resources(self) -> dict[str, str]:
        return {self.resource_name: str(self.gpus)}


def ready_condition() -> Obj:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "fake node for dra-migrate e2e",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def _slices(node: str, driver: str, pool: str, suffix: str, devices: list[Obj]) -> list[Obj]:
    """One ResourceSlice per pool (a pool may hold <= 128 devices); none if there are no devices."""
    if not devices:
        return []
    if len(devices) > 128:
        raise ValueError(f"{node}: {len(devices)} devices exceed one ResourceSlice (128)")
    return [
        {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.replace('.', '-')}-{suffix}", "labels": {NODE_LABEL: node}},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
    ]


def add_node(kube: Kube, spec: FakeNode) -> Obj:
    """Create the node (Ready, untainted) and its ResourceSlices."""
    node = kube.create(spec.node_manifest())
    if not is_ready(node):
        # Some servers drop status on create; set it through the status subresource.
        node = kube.patch("v1", "Node", spec.name, {"status": spec.node_manifest()["status"]}, subresource="status")
    for resource_slice in spec.resource_slices():
        kube.create(resource_slice)
    return node


def remove_node(kube: Kube, name: str) -> None:
    for resource_slice in kube.list(RESOURCE_API, "ResourceSlice", label_selector=f"{NODE_LABEL}={name}"):
        kube.delete(RESOURCE_API, "ResourceSlice", resource_slice["metadata"]["name"])
    kube.delete("v1", "Node", name)


def is_ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def set_unschedulable(kube: Kube, name: str, unschedulable: bool) -> None:
    kube.patch("v1", "Node", name, {"spec": {"unschedulable": unschedulable or None}})


def default_nodes() -> list[FakeNode]:
    return [
        NvidiaDraNode("dra-gpu-node-1"),
        NvidiaDraNode("dra-gpu-node-2", separate_mig_pool=True),
        ExampleDraNode("example-gpu-node-1"),
        DevicePluginNode("device-plugin-node-1"),
    ]


@dataclass
class FakeCluster:
    """The fake nodes and devices currently in the cluster, keyed by node name."""

    kube: Kube
    nodes: dict[str, FakeNode] = field(default_factory=dict)

    def add(self, spec: FakeNode) -> None:
        add_node(self.kube, spec)
        self.nodes[spec.name] = spec

    def remove(self, name: str) -> None:
        remove_node(self.kube, name)
        self.nodes.pop(name, None)

    def names(self, role: str) -> list[str]:
        return [name for name, spec in self.nodes.items() if spec.role == role]

    @property
    def nvidia_dra_nodes(self) -> list[str]:
        return self.names("dra-nvidia")

    @property
    def example_dra_nodes(self) -> list[str]:
        return self.names("dra-example")

    @property
    def device_plugin_nodes(self) -> list[str]:
        return self.names("device-plugin")

    def device(self, driver: str, pool: str, name: str) -> Obj:
        """The published device behind an allocation result (driver, pool, device)."""
        for spec in self.nodes.values():
            for resource_slice in spec.resource_slices():
                slice_spec = resource_slice["spec"]
                if slice_spec["driver"] != driver or slice_spec["pool"]["name"] != pool:
                    continue
                for device in slice_spec["devices"]:
                    if device["name"] == name:
                        return dict(device)
        raise KeyError(f"no device {driver}/{pool}/{name} in the fake cluster")

    def node_of_pool(self, driver: str, pool: str) -> str:
        for spec in self.nodes.values():
            for resource_slice in spec.resource_slices():
                if resource_slice["spec"]["driver"] == driver and resource_slice["spec"]["pool"]["name"] == pool:
                    return spec.name
        raise KeyError(f"no pool {driver}/{pool} in the fake cluster")

    @contextmanager
    def exclusive(self, *specs: FakeNode) -> Iterator[list[str]]:
        """Add `specs` and cordon every other node, so only they can take pods.

        For capacity scenarios ("a node with exactly 1 free GPU"). On exit the
        added nodes are removed and the cordoned ones uncordoned.
        """
        cordoned = [n["metadata"]["name"] for n in self.kube.list("v1", "Node") if not n["spec"].get("unschedulable")]
        for name in cordoned:
            set_unschedulable(self.kube, name, True)
        added: list[str] = []
        try:
            for spec in specs:
                self.add(spec)
                added.append(spec.name)
            yield added
        finally:
            for name in added:
                self.remove(name)
            for name in cordoned:
                set_unschedulable(self.kube, name, False)


def build_cluster(kube: Kube, nodes: Sequence[FakeNode] | None = None) -> FakeCluster:
    ensure_device_classes(kube)
    cluster = FakeCluster(kube)
    for spec in default_nodes() if nodes is None else nodes:
        cluster.add(spec)
    return cluster


# --------------------------------------------------------------------------- namespaces, pods, claims


def create_namespace(kube: Kube, prefix: str = "e2e") -> str:
    created = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": f"{prefix}-"}})
    return str(created["metadata"]["name"])


def delete_namespace(kube: Kube, name: str, *, until_gone: bool = False, timeout: float = DEFAULT_TIMEOUT_S) -> None:
    """Delete a namespace; return once no pod is left and no claim in it holds a device.

    Bound pods never finish graceful deletion without a kubelet, so pods are
    force-deleted (grace 0). Waiting for the namespace object itself to vanish
    (`until_gone`) costs the namespace controller's retry delay (~5 s) and is
    not needed for the next test to see the devices as free.
    """
    kube.delete("v1", "Namespace", name)  # first, so controllers cannot create new pods in it

    def released() -> bool:
        pods = kube.list("v1", "Pod", name)
        for pod in pods:
            kube.delete("v1", "Pod", pod["metadata"]["name"], name, grace_period_seconds=0)
        if pods:
            return False
        if until_gone:
            return kube.get("v1", "Namespace", name) is None
        return not any(allocation_results(c) for c in kube.list(RESOURCE_API, "ResourceClaim", name))

    try:
        wait_for(released, what=f"namespace {name} to release its pods and devices", timeout=timeout)
    except AssertionError as err:
        warnings.warn(str(err), stacklevel=2)


def wait_for_pod_bound(kube: Kube, namespace: str, name: str, timeout: float = DEFAULT_TIMEOUT_S) -> Obj:
    """Wait until the scheduler bound the pod (spec.nodeName set); returns the pod."""

    def bound() -> Obj | None:
        pod = kube.get("v1", "Pod", name, namespace)
        return pod if pod and pod["spec"].get("nodeName") else None

    return wait_for(bound, what=f"pod {namespace}/{name} to be bound", timeout=timeout)


def pod_condition(pod: Mapping[str, Any], condition_type: str) -> Obj | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return dict(condition)
    return None


def claims_owned_by(kube: Kube, namespace: str, pod: Mapping[str, Any]) -> list[Obj]:
    uid = pod["metadata"]["uid"]
    return [
        claim
        for claim in kube.list(RESOURCE_API, "ResourceClaim", namespace)
        if any(ref.get("uid") == uid for ref in claim["metadata"].get("ownerReferences") or [])
    ]


def allocation_results(claim: Mapping[str, Any]) -> list[Obj]:
    """status.allocation.devices.results of a claim ([] while unallocated)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def wait_for_allocated_claim(kube: Kube, namespace: str, name: str, timeout: float = DEFAULT_TIMEOUT_S) -> Obj:
    def allocated() -> Obj | None:
        claim = kube.get(RESOURCE_API, "ResourceClaim", name, namespace)
        return claim if claim and allocation_results(claim) else None

    return wait_for(allocated, what=f"ResourceClaim {namespace}/{name} to be allocated", timeout=timeout)


def wait_for_pod_claims(
    kube: Kube, namespace: str, pod_name: str, count: int = 1, timeout: float = DEFAULT_TIMEOUT_S
) -> list[Obj]:
    """Wait until `count` claims owned by the pod exist and are all allocated; returns them."""

    def ready() -> list[Obj] | None:
        pod = kube.get("v1", "Pod", pod_name, namespace)
        if pod is None:
            return None
        claims = claims_owned_by(kube, namespace, pod)
        if len(claims) == count and all(allocation_results(c) for c in claims):
            return claims
        return None

    return wait_for(ready, what=f"{count} allocated claim(s) of pod {namespace}/{pod_name}", timeout=timeout)


def create_quota(kube: Kube, namespace: str, name: str, hard: Mapping[str, str]) -> None:
    """A ResourceQuota, once the resourcequota controller has computed its status (quota admission refuses
    every create in the namespace until then)."""
    kube.create(
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": dict(hard)}},
        namespace,
    )
    wait_for(
        lambda: (kube.get("v1", "ResourceQuota", name, namespace) or {}).get("status", {}).get("hard"),
        what="the resourcequota controller to compute the quota's status",
    )
