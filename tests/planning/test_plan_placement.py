"""Where a pod can land: nodeSelector, nodeName, required node affinity and tolerations against node taints
(engine.placement, used by the plan and by the engine's shared names); pods planned with their controller;
every kind convert knows read from a snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from planning_support import api_node, cluster_state
from test_node_model import configs, helm_plugin, plan_of

from dra_migrate.cli import main
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.engine import selects, tolerates

TIME_SLICED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
LABELS = {"pool": "a", "gpus": "8", "zone": "z1"}


def _affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    term = {"matchExpressions": list(expressions)}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    }


@pytest.mark.parametrize(
    ("spec", "lands"),
    [
        ({"nodeSelector": {"pool": "a"}}, True),
        ({"nodeSelector": {"pool": "b"}}, False),
        ({"nodeName": "n1"}, True),
        ({"nodeName": "n2"}, False),
        (_affinity({"key": "pool", "operator": "In", "values": ["a", "b"]}), True),
        (_affinity({"key": "pool", "operator": "NotIn", "values": ["a"]}), False),
        (_affinity({"key": "absent", "operator": "NotIn", "values": ["a"]}), True),
        (_affinity({"key": "zone", "operator": "Exists"}), True),
        (_affinity({"key": "zone", "operator": "DoesNotExist"}), False),
        (_affinity({"key": "gpus", "operator": "Gt", "values": ["4"]}), True),
        (_affinity({"key": "gpus", "operator": "Lt", "values": ["4"]}), False),
        (
            _affinity(
                {"key": "pool", "operator": "In", "values": ["a"]}, {"key": "zone", "operator": "In", "values": ["z2"]}
            ),
            False,
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]},
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                            ]
                        }
                    }
                }
            },
            True,
        ),
    ],
)
def test_where_a_pod_can_land(spec: dict[str, Any], lands: bool) -> None:
    assert selects(spec, LABELS, "n1") is lands


def test_tolerations_against_taints() -> None:
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    assert not tolerates({}, [taint])
    assert tolerates({}, [{**taint, "effect": "PreferNoSchedule"}])
    assert tolerates({"tolerations": [{"key": "gpu", "operator": "Exists"}]}, [taint])
    assert tolerates({"tolerations": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}, [taint])
    assert not tolerates({"tolerations": [{"key": "gpu", "value": "false"}]}, [taint])
    assert tolerates({"tolerations": [{"operator": "Exists"}]}, [taint])
    assert tolerates({"nodeName": "n1"}, [taint])  # the kubelet admits a pinned pod past NoSchedule


def _deployment(name: str, **spec: Any) -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}], **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"template": {"spec": pod_spec}},
    }


def _shared_cluster(*extra: dict[str, Any]) -> dict[str, Any]:
    """Pool `ts` time-sliced and tainted, pool `whole` whole GPUs."""
    labels = {"pool": "ts", "nvidia.com/device-plugin.config": "ts", "kubernetes.io/hostname": "ts-0"}
    shared = api_node("ts-0", labels, {"nvidia.com/gpu": "16"})
    shared["spec"] = {"taints": [{"key": "shared", "value": "true", "effect": "NoSchedule"}]}
    whole = api_node("whole-0", {"pool": "whole", "kubernetes.io/hostname": "whole-0"}, {"nvidia.com/gpu": "8"})
    plugin = helm_plugin(selector={})
    return plan_of(shared, whole, plugin, configs(default="version: v1\n", ts=TIME_SLICED), *extra)


def test_affinity_nodename_and_taints_decide_whether_a_pod_can_reach_a_shared_pool() -> None:
    """Only a pod that can land on the time-sliced pool is kept on the device plugin: one whose required
    affinity or nodeName rules it out, or that does not tolerate its taint, converts."""
    tolerate = {"tolerations": [{"key": "shared", "operator": "Exists"}]}
    plan = _shared_cluster(
        _deployment("untolerated"),
        _deployment("tolerated", **tolerate),
        _deployment("affinity", **tolerate, **_affinity({"key": "pool", "operator": "NotIn", "values": ["ts"]})),
        _deployment("pinned", nodeName="whole-0", **tolerate),
    )
    paths = {w["name"]: (w["path"], w["can_land"]) for w in plan["workloads"]}
    assert paths["tolerated"] == ("blocked", {"ts": 1, "whole": 1})
    assert paths["untolerated"][1] == {"whole": 1}
    assert paths["affinity"] == ("claims", {"whole": 1})
    assert paths["pinned"] == ("claims", {"whole": 1})


def test_pods_are_planned_with_their_controller() -> None:
    """A StatefulSet's pods (and a PyTorchJob's) are its workload, not workloads of their own."""
    stateful = {**_deployment("db"), "kind": "StatefulSet"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "db-0",
            "namespace": "ml",
            "ownerReferences": [{"kind": "StatefulSet", "name": "db", "controller": True}],
        },
        "spec": {"nodeName": "whole-0", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    plan = plan_of(api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}), stateful, pod)
    assert [(w["kind"], w["name"], w["pools"]) for w in plan["workloads"]] == [("StatefulSet", "db", ["whole"])]


def test_every_kind_convert_knows_is_read_from_a_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    worker = {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}}
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"pytorchReplicaSpecs": {"Worker": worker}},
    }
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray", "namespace": "ml"},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}, "workerGroupSpecs": [worker]},
    }
    state = cluster_state(
        api_node("gpu-0", {"pool": "p"}, {"nvidia.com/gpu": "8"}), pytorch, ray, server_version="v1.36.1"
    )
    write_snapshot(state, tmp_path / "cluster")
    assert main(["plan", "--cluster", str(tmp_path / "cluster"), "--pool-label", "pool", "--report", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    # claims on the cluster as it is; left to KEP-5004 once the plan's DeviceClass for nvidia.com/gpu exists
    assert sorted((w["kind"], w["path_before_classes"], w["path"]) for w in plan["workloads"]) == [
        ("PyTorchJob", "claims", "kep-5004"),
        ("RayCluster", "claims", "kep-5004"),
    ]
