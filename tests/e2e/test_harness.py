"""Smoke tests proving the harness: real apiserver, controller, scheduler and the fake driver."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s_client
from pods import pause_pod
from polling import wait_for

from dra_migrate.engine import Target

from .binaries import Release, cached_binary_dir
from .cluster_fixtures import (
    NVIDIA_DRIVER,
    RESOURCE_API,
    FakeCluster,
    Kube,
    NvidiaDraNode,
    allocation_results,
    claims_owned_by,
    pod_condition,
    wait_for_pod_bound,
    wait_for_pod_claims,
)
from .controlplane import DRA_KINDS, ControlPlane, server_git_version
from .manifests import Discovery, Rest, served_versions

Obj = dict[str, Any]


def claim_template(name: str, request: Obj) -> Obj:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", **request}]}}},
    }


def pod_with_template_claim(name: str, template: str) -> Obj:
    return pause_pod(
        name,
        resources={"claims": [{"name": "gpu"}]},
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": template}],
    )


def run_pod_with_template(kube: Kube, namespace: str, name: str, request: Obj) -> tuple[Obj, Obj]:
    """Create template + pod, wait for binding and allocation; returns (pod, claim)."""
    kube.create(claim_template(f"{name}-tmpl", request), namespace)
    kube.create(pod_with_template_claim(name, f"{name}-tmpl"), namespace)
    [claim] = wait_for_pod_claims(kube, namespace, name, count=1)
    return wait_for_pod_bound(kube, namespace, name), claim


def test_apiserver_reports_pinned_version(
    control_plane: ControlPlane, release: Release, k8s_api_client: k8s_client.ApiClient
) -> None:
    served = server_git_version(k8s_api_client)
    apiserver = control_plane.binaries["kube-apiserver"]
    if apiserver.parent != cached_binary_dir("kube-apiserver", release):
        # Supplied by the user: chosen because it reports this release, any patch.
        assert served.startswith(f"v{release.minor}."), f"{apiserver} serves {served}"
        return
    assert served == release.kubernetes


def test_default_dra_versions_are_the_engines(control_plane: ControlPlane, target: Target) -> None:
    """Without --runtime-config each DRA kind is served in exactly the versions the engine's release
    table says are on by default (1.34+: v1 only; v1beta1/v1beta2 are off by default)."""
    discovery = Discovery.load(Rest(control_plane))
    release = target.release
    for kind in DRA_KINDS:
        expected = {v for v in release.served_versions(kind) if release.on_by_default(v, kind)}
        assert set(served_versions(discovery, kind)) == expected, kind


def test_fake_cluster_is_schedulable(kube: Kube, fake_cluster: FakeCluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
    assert set(fake_cluster.nodes) <= set(nodes)
    for name in fake_cluster.nodes:
        assert not nodes[name]["spec"].get("taints"), f"{name} must be untainted"
    slices = kube.list(RESOURCE_API, "ResourceSlice", field_selector=f"spec.driver={NVIDIA_DRIVER}")
    gpus = [d for s in slices for d in s["spec"]["devices"] if d["attributes"]["type"]["string"] == "gpu"]
    assert len(gpus) == 8 * len(fake_cluster.nvidia_dra_nodes)


def test_template_claim_allocates_two_gpus_and_binds_pod(kube: Kube, fake_cluster: FakeCluster, namespace: str) -> None:
    request = {"exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    pod, claim = run_pod_with_template(kube, namespace, "two-gpus", request)

    # The resourceclaim controller generated the claim for the pod and owns it through the pod.
    [owner] = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner.get("controller")) == ("Pod", "two-gpus", True)
    owned = claims_owned_by(kube, namespace, pod)
    assert [c["metadata"]["name"] for c in owned] == [claim["metadata"]["name"]]
    statuses = {s["name"]: s.get("resourceClaimName") for s in pod["status"].get("resourceClaimStatuses") or []}
    assert statuses == {"gpu": claim["metadata"]["name"]}

    # The scheduler allocated two distinct full GPUs from the node it bound the pod to.
    results = allocation_results(claim)
    assert len(results) == 2
    assert len({(r["pool"], r["device"]) for r in results}) == 2
    for result in results:
        assert result["driver"] == NVIDIA_DRIVER
        assert fake_cluster.node_of_pool(NVIDIA_DRIVER, result["pool"]) == pod["spec"]["nodeName"]
        assert fake_cluster.device(NVIDIA_DRIVER, result["pool"], result["device"])["attributes"]["type"] == {
            "string": "gpu"
        }
    assert pod["spec"]["nodeName"] in fake_cluster.nvidia_dra_nodes
    assert (pod_condition(pod, "PodScheduled") or {}).get("status") == "True"
    reserved = claim["status"].get("reservedFor") or []
    assert [r["uid"] for r in reserved] == [pod["metadata"]["uid"]]


def test_mig_class_allocates_requested_profile(kube: Kube, fake_cluster: FakeCluster, namespace: str) -> None:
    selector = f'device.attributes["{NVIDIA_DRIVER}"].profile == "3g.20gb"'
    request = {"exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [{"cel": {"expression": selector}}]}}
    pod, claim = run_pod_with_template(kube, namespace, "mig-3g", request)

    [result] = allocation_results(claim)
    device = fake_cluster.device(result["driver"], result["pool"], result["device"])
    assert device["attributes"]["type"] == {"string": "mig"}
    assert device["attributes"]["profile"] == {"string": "3g.20gb"}
    assert fake_cluster.node_of_pool(NVIDIA_DRIVER, result["pool"]) == pod["spec"]["nodeName"]


def test_device_plugin_request_lands_on_device_plugin_node(
    kube: Kube, fake_cluster: FakeCluster, namespace: str
) -> None:
    limits = {"nvidia.com/gpu": "2"}
    kube.create(pause_pod("legacy", resources={"limits": limits, "requests": limits}), namespace)
    pod = wait_for_pod_bound(kube, namespace, "legacy")
    assert pod["spec"]["nodeName"] in fake_cluster.device_plugin_nodes


def test_exclusive_node_with_one_gpu_fits_one_claim_only(kube: Kube, fake_cluster: FakeCluster, namespace: str) -> None:
    request = {"exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}
    with fake_cluster.exclusive(NvidiaDraNode("one-gpu-node", gpus=1, mig_parents=0)):
        first, _ = run_pod_with_template(kube, namespace, "first", request)
        assert first["spec"]["nodeName"] == "one-gpu-node"
        kube.create(claim_template("second-tmpl", request), namespace)
        kube.create(pod_with_template_claim("second", "second-tmpl"), namespace)

        def unschedulable() -> Obj | None:
            pod = kube.get("v1", "Pod", "second", namespace)
            condition = pod_condition(pod, "PodScheduled") if pod else None
            return condition if condition and condition.get("reason") == "Unschedulable" else None

        wait_for(unschedulable, what="second pod to be reported Unschedulable")
        pod = kube.get("v1", "Pod", "second", namespace)
        assert pod is not None and not pod["spec"].get("nodeName")
