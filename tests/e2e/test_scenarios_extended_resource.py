"""KEP-5004 on the real scheduler: an unchanged `nvidia.com/gpu: 2` pod served through DRA.

A DeviceClass that names `nvidia.com/gpu` in `spec.extendedResourceName` lets the scheduler
satisfy the classic extended-resource request from ResourceSlices: it creates a special claim
(annotation `resource.kubernetes.io/extended-resource-claim: "true"`, owned by the pod), allocates
it and records it in the pod's `status.extendedResourceClaimStatus`. Whether that happens is the
feature gate `DRAExtendedResource`, on by default from 1.36; the expectation per release is the
engine's (`Target.feature_enabled`).

The translator on `--strategy auto` for such a release leaves those pods alone and writes the
DeviceClasses they need (`--device-classes`); applied, they make the unchanged pods schedule. The
webhook on `strategy: auto` does the same at admission. A pod pinned with `nodeName` bypasses the
scheduler, so both still rewrite it into a claim.

The scenarios run on a node that publishes GPUs only through DRA (`fake_cluster.exclusive`): a
node that also advertises `nvidia.com/gpu` in allocatable would be served by the device-plugin
path instead. Only the last scenario registers the webhook (module scope: it stays registered
until the module ends, so it comes last).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from pods import gpu_pod
from polling import wait_for

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
    pod_condition,
    wait_for_pod_bound,
    wait_for_pod_claims,
)
from .manifests import convert, documents, for_create
from .webhook_process import LocalWebhook, deploy_server_config

Obj = dict[str, Any]
GATE = "DRAExtendedResource"
EXTENDED_RESOURCE_CLAIM = "resource.kubernetes.io/extended-resource-claim"
MAPPED_CLASS = "extended.gpu.nvidia.com"
MIG_RESOURCE = "nvidia.com/mig-1g.5gb"
# Full GPUs and one GPU in MIG mode (two 1g.5gb slices), all published through DRA only.
DRA_ONLY_NODE = NvidiaDraNode("kep5004-node-1", gpus=4, mig_parents=1)


def extended_resource_class(name: str, resource: str) -> Obj:
    """The full-GPU class of the fake driver, also reachable as the extended resource `resource`."""
    manifest = device_class(name, nvidia_type_selector("gpu"))
    manifest["spec"]["extendedResourceName"] = resource
    return manifest


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


def wait_for_extended_resource_claim(kube: Kube, namespace: str, name: str) -> tuple[Obj, Obj]:
    """Wait until the scheduler bound the pod through its special claim; returns (pod, claim)."""

    def with_claim_status() -> Obj | None:
        pod = kube.get("v1", "Pod", name, namespace)
        return pod if pod and (pod.get("status") or {}).get("extendedResourceClaimStatus") else None

    wait_for(with_claim_status, what=f"the scheduler to record pod {name}'s extended-resource claim")
    pod = wait_for_pod_bound(kube, namespace, name)
    return pod, extended_resource_claim(kube, namespace, pod)


def device_kinds(fake_cluster: FakeCluster, claims: Sequence[Obj], node: str) -> list[tuple[str, str]]:
    """(type, profile) of every device allocated to `claims`, checked to be on `node`."""
    kinds = []
    for result in (r for claim in claims for r in allocation_results(claim)):
        assert fake_cluster.node_of_pool(result["driver"], result["pool"]) == node, result
        attributes = fake_cluster.device(result["driver"], result["pool"], result["device"])["attributes"]
        kinds.append((attributes["type"]["string"], attributes.get("profile", {}).get("string", "")))
    return sorted(kinds)


def test_unchanged_device_plugin_pod_gets_two_devices_through_dra(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, target: Target, dra_only_node: str
) -> None:
    require_gate(target, on=True)
    with applied(kube, [extended_resource_class(MAPPED_CLASS, DEVICE_PLUGIN_RESOURCE)]):
        created = kube.create(gpu_pod("unchanged", count=2), namespace)
        pod, claim = wait_for_extended_resource_claim(kube, namespace, "unchanged")

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
        kube.create(gpu_pod("unchanged", count=2), namespace)

        def unschedulable() -> Obj | None:
            pod = kube.get("v1", "Pod", "unchanged", namespace)
            condition = pod_condition(pod, "PodScheduled") if pod else None
            return condition if condition and condition.get("reason") == "Unschedulable" else None

        condition = wait_for(unschedulable, what="the pod to be reported Unschedulable")
    assert DEVICE_PLUGIN_RESOURCE in str(condition.get("message")), condition
    pod = kube.get("v1", "Pod", "unchanged", namespace)
    assert pod is not None and not pod["spec"].get("nodeName")
    assert not (pod.get("status") or {}).get("extendedResourceClaimStatus")


# --------------------------------------------------------------------------- the translator on auto


def translator_inputs(node: str) -> list[Obj]:
    return [
        gpu_pod("whole-gpus", count=2),
        gpu_pod("mig-slice", count=1, resource=MIG_RESOURCE),
        gpu_pod("pinned", count=1, nodeName=node),
    ]


def test_translator_device_classes_serve_the_pods_it_leaves_alone(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, target: Target, tmp_path: Path
) -> None:
    require_gate(target, on=True)
    source = tmp_path / "src"
    source.mkdir()
    inputs = translator_inputs(DRA_ONLY_NODE.name)
    (source / "pods.yaml").write_text("---\n".join(yaml.safe_dump(p) for p in inputs), encoding="utf-8")
    classes_file = tmp_path / "device-classes.yaml"
    run = convert(
        source,
        tmp_path / "out",
        "--target-version",
        str(target),
        "--strategy",
        "auto",
        "--device-classes",
        str(classes_file),
    )
    assert run.returncode == 0, run.stderr
    [(_, _, outputs)] = list(run.pairs())
    converted = {o["metadata"]["name"]: o for o in outputs}

    # Whole devices and a MIG profile are left to KEP-5004; the pinned pod is rewritten.
    for name in ("whole-gpus", "mig-slice"):
        assert converted[name] == next(p for p in inputs if p["metadata"]["name"] == name), name
    assert converted["pinned"]["spec"].get("resourceClaims"), converted["pinned"]
    paths = {f["name"]: f["message"] for f in run.findings("info") if f["rule"] == "migration-path"}
    assert "-> extended-resource" in paths["whole-gpus"] and "-> claim" in paths["pinned"], paths
    emitted = documents(classes_file)
    names = {c["spec"]["extendedResourceName"]: c["metadata"]["name"] for c in emitted}
    assert set(names) == {DEVICE_PLUGIN_RESOURCE, MIG_RESOURCE}, emitted

    with fake_cluster.exclusive(DRA_ONLY_NODE) as [node], applied(kube, emitted):
        for obj in outputs:  # templates first, as written
            kube.create(for_create(obj, namespace))
        whole, whole_claim = wait_for_extended_resource_claim(kube, namespace, "whole-gpus")
        mig, mig_claim = wait_for_extended_resource_claim(kube, namespace, "mig-slice")
        pinned_claims = wait_for_pod_claims(kube, namespace, "pinned", count=1)
        pinned = wait_for_pod_bound(kube, namespace, "pinned")

        assert device_kinds(fake_cluster, [whole_claim], node) == [("gpu", ""), ("gpu", "")]
        assert device_kinds(fake_cluster, [mig_claim], node) == [("mig", "1g.5gb")]
        assert device_kinds(fake_cluster, pinned_claims, node) == [("gpu", "")]
    for claim, resource in ((whole_claim, DEVICE_PLUGIN_RESOURCE), (mig_claim, MIG_RESOURCE)):
        classes = [r["exactly"]["deviceClassName"] for r in claim["spec"]["devices"]["requests"]]
        assert classes == [names[resource]], f"{resource} served by {classes}"
    assert whole["spec"]["nodeName"] == mig["spec"]["nodeName"] == pinned["spec"]["nodeName"] == node
    assert not whole["spec"].get("resourceClaims") and not mig["spec"].get("resourceClaims")


# --------------------------------------------------------------------------- the webhook on auto


def auto_config(target: Target) -> Obj:
    """deploy/'s configuration for this release on `strategy: auto`, knowing the mapped class (the
    webhook also reads the release and the classes from the cluster; test_scenarios_trust.py shows
    that on its own)."""
    mapped = {
        "name": MAPPED_CLASS,
        "extendedResourceName": DEVICE_PLUGIN_RESOURCE,
        "selectors": [nvidia_type_selector("gpu")],
    }
    return {
        **deploy_server_config(),
        "targetVersion": str(target),
        "strategy": "auto",
        "clusterDeviceClasses": [mapped],
    }


def test_webhook_on_auto_leaves_the_pod_to_kep5004_but_converts_a_pinned_pod(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, target: Target, webhook: LocalWebhook
) -> None:
    require_gate(target, on=True)
    with (
        webhook.running_with("auto", auto_config(target)),
        fake_cluster.exclusive(DRA_ONLY_NODE) as [node],
        applied(kube, [extended_resource_class(MAPPED_CLASS, DEVICE_PLUGIN_RESOURCE)]),
    ):
        before = webhook.review_count()
        whole = kube.create(gpu_pod("whole-gpus", count=2), namespace)
        pinned = kube.create(gpu_pod("pinned", count=1, nodeName=node), namespace)
        assert webhook.review_count() >= before + 2, "the webhook did not review both pods"

        # Admitted as written: KEP-5004 serves it.
        assert whole["spec"]["containers"][0]["resources"]["limits"] == {DEVICE_PLUGIN_RESOURCE: "2"}
        assert not whole["spec"].get("resourceClaims")
        # Pinned: nodeName dropped for node selection, the GPU moved into a claim.
        assert not pinned["spec"].get("nodeName") and pinned["spec"].get("resourceClaims"), pinned["spec"]
        assert DEVICE_PLUGIN_RESOURCE not in (pinned["spec"]["containers"][0]["resources"].get("limits") or {})

        _, whole_claim = wait_for_extended_resource_claim(kube, namespace, "whole-gpus")
        pinned_claims = wait_for_pod_claims(kube, namespace, "pinned", count=1)
        bound = wait_for_pod_bound(kube, namespace, "pinned")
        assert device_kinds(fake_cluster, [whole_claim], node) == [("gpu", ""), ("gpu", "")]
        assert device_kinds(fake_cluster, pinned_claims, node) == [("gpu", "")]
        assert bound["spec"]["nodeName"] == node
