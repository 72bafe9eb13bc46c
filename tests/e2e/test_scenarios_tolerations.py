"""A GPU node tainted `nvidia.com/gpu=present:NoSchedule` and kube-apiserver's
ExtendedResourceToleration admission plugin on, as GKE runs them: the plugin lets only pods that
request `nvidia.com/gpu` onto the node. A pod the translator converted no longer requests it; with
the toleration the translator keeps, the real scheduler places it there and allocates its claim,
and without it the pod stays Pending on the taint."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pods import gpu_pod
from polling import wait_for

from .cluster_fixtures import (
    Kube,
    NvidiaDraNode,
    build_cluster,
    create_namespace,
    delete_namespace,
    wait_for_pod_bound,
    wait_for_pod_claims,
)
from .controlplane import ControlPlane, remove_workdir

GPU_NODE = "tainted-gpu-node"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@dataclass
class TaintedCluster:
    plane: ControlPlane
    kube: Kube


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> Iterator[TaintedCluster]:
    workdir = Path(tempfile.mkdtemp(prefix="dra-migrate-e2e-tolerations-"))
    plane = ControlPlane(
        control_plane.binaries,
        workdir / "plane",
        control_plane.spec,
        extra_apiserver_args=["--enable-admission-plugins=ExtendedResourceToleration"],
    )
    plane.workdir.mkdir(parents=True)
    failed = True
    try:
        plane.start()
        kube = Kube(plane.new_api_client())
        build_cluster(kube, [NvidiaDraNode(GPU_NODE, gpus=2, mig_parents=0)])
        kube.patch("v1", "Node", GPU_NODE, {"spec": {"taints": [TAINT]}})
        yield TaintedCluster(plane, kube)
        failed = False
    finally:
        plane.stop()
        if not failed:  # keep the logs of a failed run
            remove_workdir(workdir)


@pytest.fixture
def namespace(cluster: TaintedCluster) -> Iterator[str]:
    name = create_namespace(cluster.kube, "e2e-taint")
    try:
        yield name
    finally:
        delete_namespace(cluster.kube, name)


def _translated(tmp_path: Path, name: str, target: str, *config: str) -> list[dict[str, object]]:
    """The pod converted by the real translator CLI, with its templates."""
    source = tmp_path / f"{name}.yaml"
    source.write_text(yaml.safe_dump(gpu_pod(name)), encoding="utf-8")
    settings = tmp_path / f"{name}-config.yaml"
    settings.write_text("\n".join(config) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "dra_migrate", "convert", "--target-version", target, "--config", str(settings),
         str(source)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _create(kube: Kube, namespace: str, objects: list[dict[str, object]]) -> None:
    for obj in sorted(objects, key=lambda o: o["kind"] != "ResourceClaimTemplate"):  # templates first
        kube.create(obj, namespace)


def test_the_plugin_gives_device_plugin_pods_the_toleration(cluster: TaintedCluster, namespace: str) -> None:
    created = cluster.kube.create(gpu_pod("plugin"), namespace)
    tolerations = created["spec"].get("tolerations") or []
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations


def test_a_converted_pod_keeps_the_toleration_and_is_scheduled_on_the_tainted_node(
    cluster: TaintedCluster, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    objects = _translated(tmp_path, "kept", str(control_plane.spec.target))
    _create(cluster.kube, namespace, objects)
    assert wait_for_pod_bound(cluster.kube, namespace, "kept")["spec"]["nodeName"] == GPU_NODE
    wait_for_pod_claims(cluster.kube, namespace, "kept")


def test_without_the_toleration_the_converted_pod_stays_pending_on_the_taint(
    cluster: TaintedCluster, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    objects = _translated(tmp_path, "lost", str(control_plane.spec.target), "resourceTolerations: false")
    _create(cluster.kube, namespace, objects)

    def unschedulable() -> str | None:
        pod = cluster.kube.get("v1", "Pod", "lost", namespace) or {}
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return str(condition.get("message"))
        return None

    message = wait_for(unschedulable, what="the scheduler to report the pod unschedulable")
    assert "untolerated taint" in message, message
    assert not (cluster.kube.get("v1", "Pod", "lost", namespace) or {}).get("spec", {}).get("nodeName")
