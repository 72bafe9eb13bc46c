"""`dra-migrate plan` against a real kube-apiserver of every supported release, with the real scheduler.

The cluster of tests/common/gpu_cluster.py is created in the control plane (its nodes are tainted, so
the other scenarios' pods stay off them): a time-sliced device-plugin pool, a whole-GPU pool, a DRA
pool and a node served both ways. The plan read live must name the over-admitted node, the shared pool
and every workload's path, and equal the plan read from the snapshot it wrote; what `--write` produced
is accepted by server-side apply; a workload the plan converts, converted by `convert --kubeconfig`,
is allocated by the scheduler on the DRA pool, and where the release serves KEP-5004 by default the
unchanged workload is allocated there through the DeviceClasses `--write` produced.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpu_cluster import DRIVER, POOL, cluster_objects, nodes
from polling import wait_for

from dra_migrate.engine import Target

from .cluster_fixtures import RESOURCE_API, Kube, allocation_results, pod_condition
from .controlplane import ControlPlane

NAMESPACES = ("ml", "nvidia")


def _dra_migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_migrate", *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def gpu_cluster(kube: Kube) -> Iterator[list[dict[str, Any]]]:
    created: list[dict[str, Any]] = []
    try:
        for node in nodes():
            kube.create({k: v for k, v in node.items() if k != "status"})
            created.append(node)
            kube.patch("v1", "Node", node["metadata"]["name"], {"status": node["status"]}, subresource="status")
        for obj in cluster_objects():
            if obj["kind"] == "DeviceClass" and kube.get(RESOURCE_API, "DeviceClass", obj["metadata"]["name"]):
                continue  # the shared fake cluster's class of the same driver
            if obj["kind"] == "Deployment":
                obj = copy.deepcopy(obj)
                obj["spec"]["replicas"] = 0  # planned from its template; the scheduler proof runs its own
            kube.create(obj)
            created.append(obj)
        yield created
    finally:
        for obj in reversed(created):
            if obj["kind"] != "Namespace":
                metadata = obj["metadata"]
                kube.delete(obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace"))
        for namespace in NAMESPACES:
            kube.delete("v1", "Namespace", namespace)


def _plan(kubeconfig: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = _dra_migrate("plan", "--kubeconfig", str(kubeconfig), "--pool-label", POOL, "--report", "json", *extra)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def _mine(plan: dict[str, Any]) -> dict[str, Any]:
    """The parts of the plan about this scenario's objects (the control plane holds other scenarios' too)."""
    return {
        "pools": {p["name"]: p for p in plan["pools"] if p["name"] in ("shared", "whole", "dra", "mixed")},
        "workloads": {w["name"]: w for w in plan["workloads"] if w["namespace"] == "ml"},
        "quotas": [q for q in plan["quotas"] if q["namespace"] == "ml"],
    }


def _wait_for_allocated_pod(kube: Kube, app: str) -> dict[str, Any]:
    def bound() -> dict[str, Any] | None:
        pods = kube.list("v1", "Pod", "ml", label_selector=f"app={app}")
        return pods[0] if pods and pods[0]["spec"].get("nodeName") else None

    return wait_for(bound, what=f"a pod of {app} to be bound", timeout=90)


def _claims_of(kube: Kube, pod: dict[str, Any]) -> list[dict[str, Any]]:
    uid = pod["metadata"]["uid"]
    return [
        c
        for c in kube.list(RESOURCE_API, "ResourceClaim", "ml")
        if any(ref.get("uid") == uid for ref in c["metadata"].get("ownerReferences") or [])
    ]


def test_the_plan_of_a_live_cluster(
    control_plane: ControlPlane,
    kube: Kube,
    kubeconfig_path: Path,
    target: Target,
    gpu_cluster: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    code, plan = _plan(kubeconfig_path, "--snapshot", str(tmp_path / "snapshot"), "--write", str(tmp_path / "out"))
    assert code == 2 and any("both-0" in e for e in plan["errors"])
    assert plan["server_version"].startswith(f"v{target}")
    mine = _mine(plan)
    assert {n: p["stack"] for n, p in mine["pools"].items()} == {
        "shared": "device-plugin",
        "whole": "device-plugin",
        "dra": "dra",
        "mixed": "both",
    }
    assert mine["pools"]["shared"]["sharing"][0]["replicas"] == 4
    # where KEP-5004 is on by default, paths are those after the plan's DeviceClass step: its class for the
    # MIG profile leaves the mig workload to the scheduler (nvidia.com/gpu gets no class: a pool time-slices it)
    kep_5004 = target.feature_enabled("DRAExtendedResource")
    assert {n: w["path"] for n, w in mine["workloads"].items()} == {
        "trainer": "claims",
        "mig": "kep-5004" if kep_5004 else "claims",
        "inference": "claims",
        "notebook": "blocked",
        "anywhere": "blocked",
    }
    assert mine["quotas"][0]["converted"] is not None

    # the snapshot it wrote plans the same
    from_snapshot = _dra_migrate(
        "plan", "--cluster", str(tmp_path / "snapshot"), "--pool-label", POOL, "--report", "json"
    )
    assert {**json.loads(from_snapshot.stdout), "cluster": ""} == {**plan, "cluster": ""}

    # what --write produced is accepted by the apiserver; no DeviceClass with extendedResourceName where the
    # release drops the field (its gate off by default)
    written = target.feature_enabled("DRAExtendedResource")
    assert (tmp_path / "out" / "deviceclasses.yaml").exists() is written
    # the plan read every namespace's quotas; another test's namespace may be gone since (its deletion was
    # under way), so only the objects of namespaces that still exist are applied
    live = {n["metadata"]["name"] for n in kube.list("v1", "Namespace") if not n["metadata"].get("deletionTimestamp")}
    for name in ("deviceclasses.yaml", "quotas.yaml") if written else ("quotas.yaml",):
        documents = [d for d in yaml.safe_load_all((tmp_path / "out" / name).read_text()) if isinstance(d, dict)]
        kept = [d for d in documents if d.get("metadata", {}).get("namespace") in (None, *live)]
        assert kept, f"{name} holds nothing to apply"
        path = tmp_path / f"live-{name}"
        path.write_text(yaml.safe_dump_all(kept), encoding="utf-8")
        applied = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path), check=False)
        assert applied.returncode == 0, applied.stderr

    # the converted workload is allocated where the plan says
    inference = next(o for o in gpu_cluster if o["kind"] == "Deployment" and o["metadata"]["name"] == "inference")
    running = _renamed(inference, "inference-converted")
    manifest = tmp_path / "inference.yaml"
    manifest.write_text(yaml.safe_dump(running))
    converted = _dra_migrate("convert", "--kubeconfig", str(kubeconfig_path), "--report", "json", str(manifest))
    assert converted.returncode == 0, converted.stderr
    documents = [d for d in yaml.safe_load_all(converted.stdout) if d]
    assert {d["kind"] for d in documents} == {"Deployment", "ResourceClaimTemplate"}
    with _created(kube, documents, "inference-converted"):
        pod = _wait_for_allocated_pod(kube, "inference-converted")
        assert pod["spec"]["nodeName"] in ("dra-0", "dra-1")
        claims = wait_for(
            lambda: [c for c in _claims_of(kube, pod) if allocation_results(c)], what="an allocated claim"
        )
        assert len(allocation_results(claims[0])) == 2

    if not target.feature_enabled("DRAExtendedResource"):
        return
    # KEP-5004: once the DeviceClasses --write produced exist, the plan of the cluster gives the same paths
    # (it had decided them with its classes) and writes no more classes
    classes = [d for d in yaml.safe_load_all((tmp_path / "out" / "deviceclasses.yaml").read_text()) if d]
    assert "nvidia.com/gpu" not in {c["spec"]["extendedResourceName"] for c in classes}
    with _created(kube, classes):
        _, replanned = _plan(kubeconfig_path)
        again = _mine(replanned)["workloads"]
        assert {n: w["path"] for n, w in again.items()} == {n: w["path"] for n, w in mine["workloads"].items()}
        assert not any(w["path_before_classes"] for w in again.values())
        assert not replanned["new_classes"] or not {
            c["spec"]["extendedResourceName"] for c in replanned["new_classes"]
        } & {c["spec"]["extendedResourceName"] for c in classes}


def _shares_slice(node: str, shares: int) -> dict[str, Any]:
    """What the NVIDIA DRA driver publishes with consumable shares (its consumable_shares.go): a device
    that several claims can hold, with a capacity `shares` of which a claim takes 1 unless it asks more."""
    quantity = str(shares)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-shares"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": f"{node}-shares", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {"type": {"string": "gpu"}},  # as the driver publishes (classes select on it)
                    "allowMultipleAllocations": True,
                    "capacity": {
                        "shares": {
                            "value": quantity,
                            "requestPolicy": {
                                "default": "1",
                                "validRange": {"min": "1", "max": quantity, "step": "1"},
                            },
                        }
                    },
                }
            ],
        },
    }


def test_a_time_sliced_pool_moves_as_shares_of_each_gpu(
    kube: Kube,
    kubeconfig_path: Path,
    target: Target,
    gpu_cluster: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    """With --consumable-shares the plan moves the time-sliced pool with the driver's settings, and the
    converted workload that runs there asks for one share: on a GPU published as 4 shares the scheduler
    places 4 of its pods and leaves the 5th pending, as the device plugin's 4 replicas did."""
    _, plan = _plan(kubeconfig_path, "--consumable-shares", "--write", str(tmp_path / "out"))
    mine = _mine(plan)
    notebook = next(o for o in gpu_cluster if o["kind"] == "Deployment" and o["metadata"]["name"] == "notebook")
    manifest = tmp_path / "notebook.yaml"
    manifest.write_text(yaml.safe_dump(_renamed(notebook, "notebook-shares")))
    converted = _dra_migrate("convert", "--kubeconfig", str(kubeconfig_path), "--consumable-shares", str(manifest))
    if not target.feature_enabled("DRAConsumableCapacity"):
        assert mine["workloads"]["notebook"]["path"] == "blocked"
        assert "DRAConsumableCapacity" in mine["pools"]["shared"]["sharing"][0]["dra"]
        assert converted.returncode == 2 and "DRAConsumableCapacity" in converted.stderr
        return
    assert mine["workloads"]["notebook"]["path"] == "claims"
    assert mine["workloads"]["anywhere"]["path"] == "blocked"
    assert (tmp_path / "out" / "dra-driver-values-shared.yaml").exists()
    assert converted.returncode == 0, converted.stderr
    documents = [d for d in yaml.safe_load_all(converted.stdout) if d]
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    deployment["spec"]["replicas"] = 5
    shares = _shares_slice("shared-0", 4)
    kube.create(shares)
    try:
        with _created(kube, documents, "notebook-shares"):

            def placed() -> list[dict[str, Any]] | None:
                pods = kube.list("v1", "Pod", "ml", label_selector="app=notebook-shares")
                bound = [p for p in pods if p["spec"].get("nodeName")]
                waiting = [p for p in pods if pod_condition(p, "PodScheduled") and not p["spec"].get("nodeName")]
                return bound if len(bound) == 4 and len(waiting) == 1 else None

            bound = wait_for(placed, what="4 pods of notebook-shares bound and 1 unschedulable", timeout=120)
            assert {p["spec"]["nodeName"] for p in bound} == {"shared-0"}
            results = [r for pod in bound for c in _claims_of(kube, pod) for r in allocation_results(c)]
            assert len(results) == 4
            assert {(r["pool"], r["device"]) for r in results} == {("shared-0-shares", "gpu-0")}
            assert [r.get("consumedCapacity") for r in results] == [{"shares": "1"}] * 4
    finally:
        kube.delete("resource.k8s.io/v1", "ResourceSlice", shares["metadata"]["name"])


def _renamed(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    """The Deployment under another name and app label, with one replica."""
    out = copy.deepcopy(deployment)
    out["metadata"]["name"] = name
    out["spec"]["replicas"] = 1
    out["spec"]["selector"] = {"matchLabels": {"app": name}}
    out["spec"]["template"]["metadata"]["labels"] = {"app": name}
    return out


@contextmanager
def _created(kube: Kube, documents: list[dict[str, Any]], app: str | None = None) -> Iterator[None]:
    """Objects for the block; deleted afterwards, with the pods of `app` (no kubelet confirms a deletion)."""
    try:
        for document in documents:
            kube.create(
                document, document["metadata"].get("namespace") or ("ml" if document["kind"] != "DeviceClass" else None)
            )
        yield
    finally:
        for document in documents:
            namespace = None if document["kind"] == "DeviceClass" else "ml"
            kube.delete(document["apiVersion"], document["kind"], document["metadata"]["name"], namespace)
        if app is not None:
            for pod in kube.list("v1", "Pod", "ml", label_selector=f"app={app}"):
                kube.delete("v1", "Pod", pod["metadata"]["name"], "ml", grace_period_seconds=0)


def _established(kube: Kube, name: str) -> bool:
    found = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name) or {}
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def test_the_plan_maps_kueue_cluster_queues(
    kube: Kube, kubeconfig_path: Path, gpu_cluster: list[dict[str, Any]], tmp_path: Path
) -> None:
    """With Kueue's CRDs (from its released module) and a ClusterQueue covering nvidia.com/gpu, the plan
    says the queue stops limiting converted pods and writes the deviceClassMappings Kueue needs."""
    from .kueue import crds

    definitions = crds()
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "gpus"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
                }
            ]
        },
    }
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    try:
        for definition in definitions:
            kube.create(definition)
        for definition in definitions:
            name = definition["metadata"]["name"]
            wait_for(functools.partial(_established, kube, name), what=f"CRD {name} to be established")
        kube.dynamic.resources.invalidate_cache()
        kube.create(flavor)
        kube.create(queue)
        _, plan = _plan(kubeconfig_path, "--write", str(tmp_path / "out"))
        (charged,) = [q for q in plan["quotas"] if q["kind"] == "ClusterQueue" and q["name"] == "gpus"]
        assert any("deviceClassMappings" in p for p in charged["problems"]), charged
        assert plan["kueue"] == {
            "resources": {"deviceClassMappings": [{"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}]}
        }
        written = yaml.safe_load((tmp_path / "out" / "kueue-config.yaml").read_text())
        assert written == plan["kueue"]
    finally:
        kube.delete("kueue.x-k8s.io/v1beta2", "ClusterQueue", "gpus")
        kube.delete("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "default")
        for definition in definitions:
            kube.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", definition["metadata"]["name"])
