"""Scenarios of the admission webhook against the real control plane.

Every test runs in its own namespace (fixture `namespace`) with the real `dra-migrate serve`
process (fixture `webhook`, module scope) registered through deploy/'s MutatingWebhookConfiguration.
The real resourceclaim controller creates the claims and the real scheduler allocates the
fake devices and binds the pods (no kubelet: bound pods stay Pending).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from pods import gpu_pod, pause_pod
from polling import wait_for

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
from .controlplane import ControlPlane
from .webhook_process import LocalWebhook

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"


@pytest.fixture(autouse=True)
def _default_webhook(webhook: LocalWebhook) -> Iterator[None]:
    """Each scenario starts with the webhook up in its deployed configuration."""
    webhook.ensure_default()
    yield


# --------------------------------------------------------------------------- helpers


def all_containers(pod: Mapping[str, Any]) -> list[Obj]:
    spec = pod.get("spec") or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def device_plugin_requests(pod: Mapping[str, Any], resource: str) -> list[str]:
    """Where `resource` is still requested, as container/section names."""
    found: list[str] = []
    for container in all_containers(pod):
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            if resource in (resources.get(section) or {}):
                found.append(f"{container['name']}.{section}")
    return found


def assert_converted(pod: Mapping[str, Any], resource: str = GPU) -> list[str]:
    """The admitted pod uses template claims instead of `resource`; returns the template names."""
    assert not device_plugin_requests(pod, resource), (
        f"{resource} still requested: {device_plugin_requests(pod, resource)}"
    )
    claims = pod["spec"].get("resourceClaims") or []
    assert claims, "the converted pod has no spec.resourceClaims"
    names = {c["name"] for c in claims}
    templates = [c.get("resourceClaimTemplateName") for c in claims]
    assert all(templates), f"every claim must come from a template (pod UID unknown at admission): {claims}"
    used = {ref["name"] for c in all_containers(pod) for ref in (c.get("resources") or {}).get("claims") or []}
    assert used and used <= names, f"containers use claims {used}, the pod declares {names}"
    return [str(t) for t in templates]


def template_requests(kube: Kube, namespace: str, name: str) -> list[Obj]:
    template = kube.get(RESOURCE_API, "ResourceClaimTemplate", name, namespace)
    assert template is not None, f"ResourceClaimTemplate {namespace}/{name} was not created"
    return list(template["spec"]["spec"]["devices"]["requests"])


def requested(request: Mapping[str, Any]) -> tuple[str, int]:
    exactly = request.get("exactly") or {}
    return str(exactly.get("deviceClassName")), int(exactly.get("count", 1))


def devices_of(claims: list[Obj]) -> list[tuple[str, str, str]]:
    return [(r["driver"], r["pool"], r["device"]) for c in claims for r in allocation_results(c)]


def assert_devices_on_node(fake_cluster: FakeCluster, devices: list[tuple[str, str, str]], node: str) -> None:
    for driver, pool, _ in devices:
        assert fake_cluster.node_of_pool(driver, pool) == node, f"device from pool {pool} is not on {node}"


def kubectl_file(
    control_plane: ControlPlane, directory: Path, manifest: Obj, *args: str
) -> subprocess.CompletedProcess[str]:
    path = directory / f"{manifest['metadata'].get('name', 'pod')}.yaml"
    path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    return control_plane.kubectl(*args, "-f", str(path), check=False)


# --------------------------------------------------------------------------- 1. basic conversion


@pytest.mark.parametrize("naming", ["name", "generateName"])
def test_gpu_pod_is_converted_and_bound_with_two_devices(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, webhook: LocalWebhook, naming: str
) -> None:
    manifest = gpu_pod("two-gpus", count=2)
    if naming == "generateName":
        manifest["metadata"] = {"generateName": "two-gpus-"}
    before = webhook.review_count()

    created = kube.create(manifest, namespace)

    assert webhook.review_count() > before, "the webhook did not review the pod"
    name = created["metadata"]["name"]
    templates = assert_converted(created)
    requests = [requested(r) for t in set(templates) for r in template_requests(kube, namespace, t)]
    assert requests == [("gpu.nvidia.com", 2)], f"templates {templates} ask for {requests}"

    claims = wait_for_pod_claims(kube, namespace, name, count=len(templates))
    pod = wait_for_pod_bound(kube, namespace, name)
    devices = devices_of(claims)
    assert len(devices) == 2 and len(set(devices)) == 2, f"expected 2 distinct devices, got {devices}"
    node = pod["spec"]["nodeName"]
    assert node in fake_cluster.nvidia_dra_nodes
    assert_devices_on_node(fake_cluster, devices, node)
    for driver, pool, device in devices:
        assert fake_cluster.device(driver, pool, device)["attributes"]["type"] == {"string": "gpu"}
    for claim in claims:  # the controller made the claim for this pod, from the webhook's template
        [owner] = claim["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("Pod", pod["metadata"]["uid"])
        annotation = claim["metadata"].get("annotations", {}).get("resource.kubernetes.io/pod-claim-name")
        assert annotation in {c["name"] for c in pod["spec"]["resourceClaims"]}


# --------------------------------------------------------------------------- 2. Deployment


def test_deployment_replicas_each_get_a_distinct_device(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, webhook: LocalWebhook
) -> None:
    labels = {"app": "gpu-deploy"}
    template = gpu_pod("unused", count=1)
    template["metadata"] = {"labels": labels}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-deploy"},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": template},
    }
    kube.create(deployment, namespace)

    def all_allocated() -> list[tuple[Obj, list[Obj]]] | None:
        pods = kube.list("v1", "Pod", namespace, label_selector="app=gpu-deploy")
        if len(pods) != 3 or not all(p["spec"].get("nodeName") for p in pods):
            return None
        owned = [(p, claims_owned_by(kube, namespace, p)) for p in pods]
        return owned if all(claims and all(allocation_results(c) for c in claims) for _, claims in owned) else None

    owned = wait_for(all_allocated, what="3 bound replicas with allocated claims")
    claims = [c for _, pod_claims in owned for c in pod_claims]
    assert len(claims) == 3, f"expected one claim per replica, got {[c['metadata']['name'] for c in claims]}"
    devices = devices_of(claims)
    assert len(devices) == 3 and len(set(devices)) == 3, f"replicas share devices: {devices}"
    for pod, pod_claims in owned:
        assert_converted(pod)
        assert_devices_on_node(fake_cluster, devices_of(pod_claims), pod["spec"]["nodeName"])

    # Only Pods are mutated: the Deployment in the API (and in Git) still says nvidia.com/gpu.
    stored = kube.get("apps/v1", "Deployment", "gpu-deploy", namespace)
    assert stored is not None
    pod_spec = stored["spec"]["template"]["spec"]
    assert pod_spec["containers"][0]["resources"]["limits"] == {GPU: "1"}
    assert "resourceClaims" not in pod_spec


# --------------------------------------------------------------------------- 3. nodeName


def test_node_name_pod_is_scheduled_to_that_node_with_its_claim(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, webhook: LocalWebhook
) -> None:
    target = fake_cluster.nvidia_dra_nodes[-1]
    created = kube.create(gpu_pod("pinned", count=1, nodeName=target), namespace)

    # Admitted without nodeName (a pre-bound pod bypasses the scheduler, which allocates claims)
    # and with node selection for the same node instead.
    assert not created["spec"].get("nodeName"), f"nodeName kept: {created['spec'].get('nodeName')}"
    selection = json.dumps({k: created["spec"].get(k) for k in ("nodeSelector", "affinity")})
    assert target in selection, f"no node selection for {target}: {selection}"
    assert_converted(created)

    [claim] = wait_for_pod_claims(kube, namespace, "pinned", count=1)
    pod = wait_for_pod_bound(kube, namespace, "pinned")
    assert pod["spec"]["nodeName"] == target
    assert (pod_condition(pod, "PodScheduled") or {}).get("status") == "True", "not bound by the scheduler"
    devices = devices_of([claim])
    assert len(devices) == 1
    assert_devices_on_node(fake_cluster, devices, target)
    assert claim["status"]["allocation"]["nodeSelector"], "allocation is not node-local"


# --------------------------------------------------------------------------- 4. init container


def test_init_and_app_container_share_the_only_free_gpu(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, webhook: LocalWebhook
) -> None:
    limits = {GPU: "1"}
    manifest = gpu_pod("init-and-app", count=1)
    manifest["spec"]["initContainers"] = [
        {"name": "init", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}
    ]
    with fake_cluster.exclusive(NvidiaDraNode("one-free-gpu-node", gpus=1, mig_parents=0)) as [node]:
        created = kube.create(manifest, namespace)
        templates = assert_converted(created)
        claims = wait_for_pod_claims(kube, namespace, "init-and-app", count=len(templates))
        pod = wait_for_pod_bound(kube, namespace, "init-and-app")
        assert pod["spec"]["nodeName"] == node
        devices = devices_of(claims)
        assert len(devices) == 1, f"the device plugin needed 1 GPU (max(init, app)); DRA allocated {devices}"


# --------------------------------------------------------------------------- 5. server-side dry run


def test_server_side_dry_run_creates_no_template_and_no_claim(
    control_plane: ControlPlane, kube: Kube, namespace: str, webhook: LocalWebhook, tmp_path: Path
) -> None:
    before = webhook.review_count()
    result = kubectl_file(
        control_plane, tmp_path, gpu_pod("dry", count=2), "apply", "--dry-run=server", "-n", namespace, "-o", "json"
    )
    assert result.returncode == 0, result.stderr

    answered = json.loads(result.stdout)
    assert webhook.review_count() > before, "the apiserver did not call the webhook for the dry run"
    assert_converted(answered)  # the dry-run answer shows the converted pod
    assert kube.get("v1", "Pod", "dry", namespace) is None
    assert kube.list(RESOURCE_API, "ResourceClaimTemplate", namespace) == []
    assert kube.list(RESOURCE_API, "ResourceClaim", namespace) == []


# --------------------------------------------------------------------------- 6. audit mode


def test_audit_mode_stores_the_pod_unchanged_and_warns(
    control_plane: ControlPlane, kube: Kube, namespace: str, webhook: LocalWebhook, tmp_path: Path
) -> None:
    with webhook.running_with("audit", {"webhook": {"mode": "audit"}}):
        before = webhook.reviews()
        result = kubectl_file(control_plane, tmp_path, gpu_pod("audited", count=2), "create", "-n", namespace)
        after = webhook.reviews()
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert any("dra-migrate" in w and "audit" in w for w in warnings), f"no audit warning on stderr: {result.stderr!r}"
    assert after.get("audited", 0) == before.get("audited", 0) + 1, f"reviews {before} -> {after}"

    stored = kube.get("v1", "Pod", "audited", namespace)
    assert stored is not None
    assert stored["spec"]["containers"][0]["resources"]["limits"] == {GPU: "2"}
    assert not stored["spec"].get("resourceClaims")
    assert kube.list(RESOURCE_API, "ResourceClaimTemplate", namespace) == []


# --------------------------------------------------------------------------- 7. pods without devices


def test_pod_without_devices_never_reaches_the_webhook(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    before = webhook.review_count()
    plain = pause_pod("plain", resources={"limits": {"cpu": "100m", "memory": "64Mi"}})
    created = kube.create(plain, namespace)
    assert webhook.review_count() == before, "matchConditions let a pod without device requests through"

    assert created["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "100m", "memory": "64Mi"}
    for field in ("resourceClaims", "nodeSelector", "affinity"):
        assert not created["spec"].get(field), f"{field} added to a pod without devices"
    assert created["metadata"].get("annotations") is None

    # The webhook is reachable and counting: a GPU pod right after is reviewed.
    kube.create(gpu_pod("gpu-after"), namespace, dry_run="All")
    assert webhook.review_count() == before + 1


# --------------------------------------------------------------------------- 8. MIG


def test_mig_request_is_allocated_a_device_of_that_profile(
    kube: Kube, fake_cluster: FakeCluster, namespace: str, webhook: LocalWebhook
) -> None:
    created = kube.create(gpu_pod("mig", resource="nvidia.com/mig-1g.5gb"), namespace)
    templates = assert_converted(created, "nvidia.com/mig-1g.5gb")
    [(device_class, count)] = [requested(r) for t in templates for r in template_requests(kube, namespace, t)]
    assert (device_class, count) == ("mig.nvidia.com", 1)

    [claim] = wait_for_pod_claims(kube, namespace, "mig", count=1)
    pod = wait_for_pod_bound(kube, namespace, "mig")
    [(driver, pool, name)] = devices_of([claim])
    device = fake_cluster.device(driver, pool, name)
    assert device["attributes"]["type"] == {"string": "mig"}
    assert device["attributes"]["profile"] == {"string": "1g.5gb"}
    assert fake_cluster.node_of_pool(NVIDIA_DRIVER, pool) == pod["spec"]["nodeName"]


# --------------------------------------------------------------------------- 12. outage


def test_webhook_outage_follows_the_deployed_failure_policy(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    policy = webhook.failure_policy
    assert webhook.hook["failurePolicy"] == policy

    with webhook.outage():
        if policy == "Fail":
            with pytest.raises(ApiException) as rejected:
                kube.create(gpu_pod("during-outage"), namespace)
            status = json.loads(rejected.value.body or "{}")
            message = str(status.get("message"))
            assert 'failed calling webhook "pods.dra-migrate.io"' in message, status
            assert kube.get("v1", "Pod", "during-outage", namespace) is None
        else:  # Ignore: admitted as it is, unconverted
            admitted = kube.create(gpu_pod("during-outage"), namespace)
            assert device_plugin_requests(admitted, GPU)

        # matchConditions keep pods without device requests away from the webhook: not blocked.
        kube.create(pause_pod("plain-during-outage"), namespace)

    converted = kube.create(gpu_pod("after-outage"), namespace)
    assert_converted(converted)
    wait_for_pod_claims(kube, namespace, "after-outage", count=1)
