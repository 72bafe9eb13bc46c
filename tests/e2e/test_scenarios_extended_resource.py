"""KEP-5004 on the real scheduler: an unchanged `nvidia.com/gpu: 2` pod served through DRA.

A DeviceClass that names `nvidia.com/gpu` in `spec.extendedResourceName` lets the scheduler
satisfy the classic extended-resource request from ResourceSlices: it creates a special claim
(annotation `resource.kubernetes.io/extended-resource-claim: "true"`, owned by the pod), allocates
it and records it in the pod's `status.extendedResourceClaimStatus`. Whether that happens is the
feature gate `DRAExtendedResource`, on by default from 1.36; the expectation per release is the
engine's (`Target.feature_enabled`).

No webhook is registered here. The scenarios run on a node that publishes GPUs only through DRA
(`fake_cluster.exclusive`): a node that also advertises `nvidia.com/gpu` in allocatable would be
served by the device-plugin path instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from dra_migrate.engine import Target

from .cluster_fixtures import (
    DEVICE_PLUGIN_RESOURCE,
    NVIDIA_DRIVER,
    RESOURCE_API,
    FakeCluster,
    Kube,
    NvidiaDraNode,
    allocation_results,
    device_class,
    nvidia_type_selector,
    pause_pod,
    pod_condition,
    wait_for,
    wait_for_pod_bound,
)

Obj = dict[str, Any]
GATE = "DRAExtendedResource"
EXTENDED_RESOURCE_CLAIM = "resource.kubernetes.io/extended-resource-claim"
MAPPED_CLASS = "extended.gpu.nvidia.com"
DRA_ONLY_NODE = NvidiaDraNode("kep5004-node-1", gpus=4, mig_parents=0)


def extended_resource_class(name: str, resource: str) -> Obj:
    """The full-GPU class of the fake driver, also reachable as the extended resource `resource`."""
    manifest = device_class(name, nvidia_type_selector("gpu"))
    manifest["spec"]["extendedResourceName"] = resource
    return manifest


def device_plugin_pod(name: str, count: int, resource: str = DEVICE_PLUGIN_RESOURCE) -> Obj:
    limits = {resource: str(count)}
    return pause_pod(name, resources={"limits": limits})


@contextmanager
def applied(kube: Kube, manifests: Sequence[Obj]) -> Iterator[list[Obj]]:
    """Create cluster-scoped objects (e.g. DeviceClasses) for the block; deleted afterwards, so
    no other scenario sees an extended-resource mapping."""
    created: list[Obj] = []
    try:
        for manifest in manifests:
            created.append(kube.create(manifest))
        yield created
    finally:
        for obj in reversed(created):
            kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


@pytest.fixture
def dra_only_node(fake_cluster: FakeCluster) -> Iterator[str]:
    with fake_cluster.exclusive(DRA_ONLY_NODE) as [node]:
        yield node


def require_gate(target: Target, on: bool) -> None:
    if target.feature_enabled(GATE) != on:
        state = "on" if target.feature_enabled(GATE) else "off"
        pytest.skip(f"{GATE} is {state} by default in {target}")


def extended_resource_claim(kube: Kube, namespace: str, pod: Obj) -> Obj:
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    name = status.get("resourceClaimName")
    assert name, f"pod has no status.extendedResourceClaimStatus: {pod.get('status')}"
    claim = kube.get(RESOURCE_API, "ResourceClaim", name, namespace)
    assert claim is not None, f"special claim {namespace}/{name} not found"
    return claim


def test_unchanged_device_plugin_pod_gets_two_devices_through_dra(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, target: Target, dra_only_node: str
) -> None:
    require_gate(target, on=True)
    with applied(kube, [extended_resource_class(MAPPED_CLASS, DEVICE_PLUGIN_RESOURCE)]):
        created = kube.create(device_plugin_pod("unchanged", count=2), namespace)

        def with_claim_status() -> Obj | None:
            pod = kube.get("v1", "Pod", "unchanged", namespace)
            return pod if pod and (pod.get("status") or {}).get("extendedResourceClaimStatus") else None

        wait_for(with_claim_status, what="the scheduler to record the pod's extended-resource claim")
        pod = wait_for_pod_bound(kube, namespace, "unchanged")
        claim = extended_resource_claim(kube, namespace, pod)

    # The pod is stored as written: no claims, the device-plugin request kept.
    assert created["spec"]["containers"][0]["resources"]["limits"] == {DEVICE_PLUGIN_RESOURCE: "2"}
    assert not pod["spec"].get("resourceClaims")
    assert pod["spec"]["nodeName"] == dra_only_node
    assert (pod_condition(pod, "PodScheduled") or {}).get("status") == "True"

    # The scheduler's special claim: marked, owned by the pod, reserved for it.
    assert claim["metadata"].get("annotations", {}).get(EXTENDED_RESOURCE_CLAIM) == "true"
    [owner] = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner.get("controller")) == ("Pod", pod["metadata"]["uid"], True)
    assert [r["uid"] for r in claim["status"].get("reservedFor") or []] == [pod["metadata"]["uid"]]

    # Two distinct full GPUs of the mapped class, from the node the pod is bound to.
    results = allocation_results(claim)
    devices = {(r["driver"], r["pool"], r["device"]) for r in results}
    assert len(results) == 2 and len(devices) == 2, f"expected 2 distinct devices, got {results}"
    for driver, pool, name in devices:
        assert driver == NVIDIA_DRIVER
        assert fake_cluster.node_of_pool(driver, pool) == dra_only_node
        assert fake_cluster.device(driver, pool, name)["attributes"]["type"] == {"string": "gpu"}
    requests = {r["name"]: r for r in claim["spec"]["devices"]["requests"]}
    assert {r["request"] for r in results} <= set(requests)
    assert [r["exactly"]["deviceClassName"] for r in requests.values()] == [MAPPED_CLASS]

    # The pod status maps the container's nvidia.com/gpu to that request.
    mappings = pod["status"]["extendedResourceClaimStatus"]["requestMappings"]
    assert [(m["containerName"], m["resourceName"]) for m in mappings] == [("main", DEVICE_PLUGIN_RESOURCE)]
    assert {m["requestName"] for m in mappings} == set(requests)


def test_without_the_gate_the_mapping_is_dropped_and_the_pod_does_not_fit(
    kube: Kube, namespace: str, target: Target, dra_only_node: str
) -> None:
    require_gate(target, on=False)
    with applied(kube, [extended_resource_class(MAPPED_CLASS, DEVICE_PLUGIN_RESOURCE)]) as [stored]:
        # The apiserver drops fields of a disabled feature on create.
        assert "extendedResourceName" not in stored["spec"], stored["spec"]
        kube.create(device_plugin_pod("unchanged", count=2), namespace)

        def unschedulable() -> Obj | None:
            pod = kube.get("v1", "Pod", "unchanged", namespace)
            condition = pod_condition(pod, "PodScheduled") if pod else None
            return condition if condition and condition.get("reason") == "Unschedulable" else None

        condition = wait_for(unschedulable, what="the pod to be reported Unschedulable")
    assert DEVICE_PLUGIN_RESOURCE in str(condition.get("message")), condition
    pod = kube.get("v1", "Pod", "unchanged", namespace)
    assert pod is not None and not pod["spec"].get("nodeName")
    assert not (pod.get("status") or {}).get("extendedResourceClaimStatus")
