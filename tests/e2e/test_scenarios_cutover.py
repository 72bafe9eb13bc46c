"""The plan's cutover applied step by step on a real kube-apiserver, resourceclaim controller and scheduler,
then rolled back step by step: after every step and every undo, every workload's pod is bound and its
claims allocated.

Two pools of fake nodes (no kubelet; tainted, so the other scenarios' pods stay off them): `nv` (two nodes,
`nvidia.com/gpu: 4` each through the device plugin) and `amd` (two nodes, `amd.com/gpu: 4`). The workloads
are bare pods, one pinned to each pool; the test is their controller: a pod the drain evicts is created again
from its manifest, converted as the webhook would at that moment (`dra-migrate convert --config` with the
stage's webhook configuration `plan --write` wrote). Moving a node to DRA takes its device-plugin names out
of its allocatable and publishes its devices in ResourceSlices, as the driver's kubelet plugin would.

Where the release serves KEP-5004 (DRAExtendedResource on by default, 1.36+) the plan writes a DeviceClass
per name and decides the paths as they are after that step: the test applies the classes, the stage
configurations carry them (as the webhook finds them in the cluster), and each workload's pod then holds
what its planned path says: claims, or the scheduler's extended-resource claim on a moved node.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from polling import wait_for

from dra_migrate.engine import EXTENDED_RESOURCE_GATE as GATE
from dra_migrate.engine import Target

from .cluster_fixtures import (
    RESOURCE_API,
    DevicePluginNode,
    Kube,
    NvidiaDraNode,
    _slices,
    add_node,
    allocation_results,
    create_namespace,
    delete_namespace,
    device_class,
    ensure_device_classes,
    remove_node,
    set_unschedulable,
)

POOL = "e2e.dra-migrate.io/cutover-pool"
TAINT = {"key": "e2e.dra-migrate.io/cutover", "value": "true", "effect": "NoSchedule"}
AMD_DRIVER = "gpu.amd.com"
NODES = {"nv": ("cut-nv-0", "cut-nv-1"), "amd": ("cut-amd-0", "cut-amd-1")}
RESOURCES = {"nv": "nvidia.com/gpu", "amd": "amd.com/gpu"}


def _dra_migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_migrate", *args], capture_output=True, text=True, timeout=300, check=False
    )


def _plugin_node(pool: str, name: str) -> DevicePluginNode:
    return DevicePluginNode(name, labels={POOL: pool}, gpus=4, resource_name=RESOURCES[pool])


def _slices_of(pool: str, name: str) -> list[dict[str, Any]]:
    if pool == "nv":
        return NvidiaDraNode(name, gpus=4, mig_parents=0).resource_slices()
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(4)]
    return _slices(name, AMD_DRIVER, name, "gpus", devices)


def _pod_manifest(pool: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{pool}-job", "namespace": namespace},
        "spec": {
            "nodeSelector": {POOL: pool},
            "tolerations": [{"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {RESOURCES[pool]: 1}}}
            ],
        },
    }


@dataclass
class Cutover:
    """The fake cluster's state the steps act on: the webhook's stage, the workloads' pods."""

    kube: Kube
    namespace: str
    out: Path
    tmp: Path
    stage: str | None = None  # the webhook configuration file, None before the webhook serves
    generation: dict[str, int] = field(default_factory=dict)

    def pod_name(self, pool: str) -> str:
        return f"{pool}-job-{self.generation.get(pool, 0)}"

    def create_pod(self, pool: str) -> None:
        """Create the workload's pod as the webhook admits it now."""
        self.generation[pool] = self.generation.get(pool, 0) + 1
        manifest = _pod_manifest(pool, self.namespace)
        manifest["metadata"]["name"] = self.pod_name(pool)
        documents = [manifest]
        if self.stage is not None:
            path = self.tmp / f"{self.pod_name(pool)}.yaml"
            path.write_text(yaml.safe_dump(manifest))
            converted = _dra_migrate("convert", "--config", str(self.out / self.stage), str(path))
            assert converted.returncode in (0, 2), converted.stderr  # 2: kept as it is, with the reason
            documents = [d for d in yaml.safe_load_all(converted.stdout) if d]
        for document in documents:
            if document["kind"] == "ResourceClaimTemplate" and self.kube.get(
                RESOURCE_API, "ResourceClaimTemplate", document["metadata"]["name"], self.namespace
            ):
                continue
            self.kube.create(document, namespace=self.namespace)

    def delete_pod(self, pool: str) -> None:
        self.kube.delete("v1", "Pod", self.pod_name(pool), self.namespace, grace_period_seconds=0)
        wait_for(
            lambda: self.kube.get("v1", "Pod", self.pod_name(pool), self.namespace) is None,
            what=f"pod {self.pod_name(pool)} to be gone",
        )

    def recreate_on(self, nodes: list[str]) -> None:
        """Drain: the pods bound to these nodes are evicted and their controller creates them again."""
        for pool in NODES:
            pod = self.kube.get("v1", "Pod", self.pod_name(pool), self.namespace) or {}
            if (pod.get("spec") or {}).get("nodeName") in nodes:
                self.delete_pod(pool)
                self.create_pod(pool)

    def all_placed(self) -> None:
        """Every workload's pod is bound, and its claims are allocated."""
        for pool in NODES:
            name = self.pod_name(pool)

            def placed(name: str = name) -> bool:
                pod = self.kube.get("v1", "Pod", name, self.namespace) or {}
                if not (pod.get("spec") or {}).get("nodeName"):
                    return False
                status = pod.get("status") or {}
                names = [s["resourceClaimName"] for s in status.get("resourceClaimStatuses") or []]
                extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
                for claim_name in [*names, *([extended] if extended else [])]:
                    claim = self.kube.get(RESOURCE_API, "ResourceClaim", claim_name, self.namespace)
                    if claim is None or not allocation_results(claim):
                        return False
                return True

            wait_for(placed, what=f"pod {name} bound with its claims allocated")


def _move_to_dra(kube: Kube, pool: str, name: str) -> None:
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    gone = {**allocatable, RESOURCES[pool]: None}  # a merge patch: the device plugin's name removed
    kube.patch("v1", "Node", name, {"status": {"capacity": gone, "allocatable": gone}}, subresource="status")
    for resource_slice in _slices_of(pool, name):
        kube.create(resource_slice)


def _move_back(kube: Kube, pool: str, name: str) -> None:
    for resource_slice in _slices_of(pool, name):
        kube.delete(RESOURCE_API, "ResourceSlice", resource_slice["metadata"]["name"])
    status = _plugin_node(pool, name).node_manifest()["status"]
    kube.patch("v1", "Node", name, {"status": status}, subresource="status")


Action = Callable[[Cutover], None]


def _device_classes(file: Path, forward: bool) -> Action:
    """The plan's DeviceClass step (apply deviceclasses.yaml) and its undo (delete them)."""

    def act(c: Cutover) -> None:
        for document in (d for d in yaml.safe_load_all(file.read_text()) if d):
            if forward:
                c.kube.create(document)
            else:
                c.kube.delete(RESOURCE_API, "DeviceClass", document["metadata"]["name"])

    return act


def _holds(kube: Kube, namespace: str, pod_name: str, path: str) -> bool:
    """The pod holds what its path means once on DRA: its own claims, or the scheduler's KEP-5004 claim."""
    pod = kube.get("v1", "Pod", pod_name, namespace) or {}
    if path == "claims":
        return bool((pod.get("spec") or {}).get("resourceClaims"))
    return bool((pod.get("status") or {}).get("extendedResourceClaimStatus")) and not (pod.get("spec") or {}).get(
        "resourceClaims"
    )


def _cordon(nodes: list[str], unschedulable: bool) -> Action:
    def act(c: Cutover) -> None:
        for name in nodes:
            set_unschedulable(c.kube, name, unschedulable)

    return act


def _drain(nodes: list[str]) -> Action:
    def act(c: Cutover) -> None:
        _cordon(nodes, True)(c)
        c.recreate_on(nodes)

    return act


def _to_dra(pool: str, nodes: list[str], forward: bool) -> Action:
    def act(c: Cutover) -> None:
        for name in nodes:
            (_move_to_dra if forward else _move_back)(c.kube, pool, name)
        if not forward:  # pods converted there lost their devices: their controller recreates them
            c.recreate_on(nodes)

    return act


def _serve(file: str | None, recreate: bool) -> Action:
    def act(c: Cutover) -> None:
        c.stage = file
        if recreate:  # the undo: the converted pods come back with device-plugin requests
            for pool in NODES:
                c.delete_pod(pool)
                c.create_pod(pool)

    return act


def _actions(step: dict[str, Any], previous_stage: str | None, out: Path) -> tuple[Action, Action] | None:
    """What a step of the plan does to the fake cluster, and its undo; None for steps outside it."""
    pool, action = step["pool"], step["action"]
    if action.startswith("apply the DeviceClasses"):
        return _device_classes(out / "deviceclasses.yaml", True), _device_classes(out / "deviceclasses.yaml", False)
    stage = re.search(r"serve with (\S+\.yaml)", action)
    if stage is not None:
        return _serve(stage.group(1), False), _serve(previous_stage, True)
    if pool not in NODES:
        return None
    nodes = [n for n in NODES[pool] if re.search(rf"\b{n}\b", action)]
    if "cordon" in action and "drain" in action:
        return _drain(nodes), _cordon(nodes, False)
    if "no longer selects them" in action:
        return _to_dra(pool, nodes, True), _to_dra(pool, nodes, False)
    if re.match(r"batch \d+/\d+: uncordon", action):
        return _cordon(nodes, False), _cordon(nodes, True)
    return None


@pytest.fixture
def cutover_cluster(kube: Kube, tmp_path: Path) -> Iterator[str]:
    ensure_device_classes(kube)
    amd_class = device_class(AMD_DRIVER, f'device.driver == "{AMD_DRIVER}"')
    created_class = kube.get(RESOURCE_API, "DeviceClass", AMD_DRIVER) is None
    if created_class:
        kube.create(amd_class)
    namespace = create_namespace(kube, "cutover")
    try:
        for pool, names in NODES.items():
            for name in names:
                add_node(kube, _plugin_node(pool, name))
                kube.patch("v1", "Node", name, {"spec": {"taints": [TAINT]}})
        yield namespace
    finally:
        delete_namespace(kube, namespace, until_gone=True)
        for names in NODES.values():
            for name in names:
                for resource_slice in kube.list(RESOURCE_API, "ResourceSlice"):
                    if resource_slice["spec"].get("nodeName") == name:
                        kube.delete(RESOURCE_API, "ResourceSlice", resource_slice["metadata"]["name"])
                remove_node(kube, name)
        if created_class:
            kube.delete(RESOURCE_API, "DeviceClass", AMD_DRIVER)


def _delete_written_classes(kube: Kube, out: Path) -> None:
    """The plan's DeviceClasses must not outlive the test on the shared control plane."""
    written = out / "deviceclasses.yaml"
    for document in (d for d in yaml.safe_load_all(written.read_text()) if d) if written.exists() else []:
        if kube.get(RESOURCE_API, "DeviceClass", document["metadata"]["name"]) is not None:
            kube.delete(RESOURCE_API, "DeviceClass", document["metadata"]["name"])


def test_the_cutover_step_by_step_and_back(
    kube: Kube, kubeconfig_path: Path, cutover_cluster: str, tmp_path: Path, target: Target
) -> None:
    out = tmp_path / "out"
    state = Cutover(kube, cutover_cluster, out, tmp_path)
    for pool in NODES:
        state.create_pod(pool)
    state.all_placed()

    planned = _dra_migrate(
        "plan", "--kubeconfig", str(kubeconfig_path), "--pool-label", POOL, "--report", "json", "--write", str(out)
    )
    assert planned.stdout, planned.stderr
    plan = json.loads(planned.stdout)
    classes_step = [s for s in plan["steps"] if s["action"].startswith("apply the DeviceClasses")]
    mine = [*classes_step, *(s for s in plan["steps"] if s["pool"] in NODES or "serve with" in s["action"])]
    assert all(s["undo"] for s in mine)
    paths = {w["name"]: w["path"] for w in plan["workloads"] if w["namespace"] == cutover_cluster}
    assert set(paths) == {state.pod_name(pool) for pool in NODES}, plan["workloads"]
    if target.feature_enabled(GATE):
        # the plan's classes exist before the webhook converts anything: both whole-device names are left to
        # the scheduler, and the class step's check names the change
        written = {
            c["spec"]["extendedResourceName"] for c in yaml.safe_load_all((out / "deviceclasses.yaml").read_text())
        }
        assert set(RESOURCES.values()) <= written, written
        assert set(paths.values()) == {"kep-5004"}, paths
        assert all(f"{name} claims -> kep-5004" in classes_step[0]["check"] for name in paths)
    else:
        assert not classes_step and set(paths.values()) == {"claims"}, paths
    path_of = {pool: paths[state.pod_name(pool)] for pool in NODES}
    try:
        _step_by_step_and_back(state, mine, out, path_of)
    finally:
        _delete_written_classes(kube, out)


def _step_by_step_and_back(state: Cutover, mine: list[dict[str, Any]], out: Path, path_of: dict[str, str]) -> None:
    """Apply the steps in order, every workload placed after each; then undo them, last first."""
    undos: list[Action] = []
    executed: list[str] = []
    stage: str | None = None
    for step in mine:
        actions = _actions(step, stage, out)
        if actions is None:
            continue
        forward, undo = actions
        forward(state)
        found = re.search(r"serve with (\S+\.yaml)", step["action"])
        stage = found.group(1) if found else stage
        state.all_placed()
        undos.append(undo)
        executed.append(step["action"])

    moved = " ".join(a for a in executed if "no longer selects them" in a)
    assert all(name in moved for names in NODES.values() for name in names), executed
    assert sum("serve with" in a for a in executed) >= 3  # the start, then one stage per pool at least
    # at the end both workloads run on DRA by the path the plan gave them, their claims allocated
    for pool in NODES:
        assert _holds(state.kube, state.namespace, state.pod_name(pool), path_of[pool]), (pool, path_of[pool])

    for undo in reversed(undos):
        undo(state)
        state.all_placed()
    for pool in NODES:
        pod = state.kube.get("v1", "Pod", state.pod_name(pool), state.namespace) or {}
        assert not (pod.get("spec") or {}).get("resourceClaims"), pool
        assert not (pod.get("status") or {}).get("extendedResourceClaimStatus"), pool
