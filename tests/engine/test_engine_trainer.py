"""Kubeflow Trainer runtimes keep their processes per node: Trainer derived them from the node
container's GPU limits, which become claims; a ClusterTrainingRuntime says where its templates go."""

from __future__ import annotations

from typing import Any

import pytest

from dra_migrate.engine import Severity, convert, default_config


def _runtime(policy: dict[str, Any], kind: str = "TrainingRuntime", gpus: Any = 4) -> dict[str, Any]:
    node = {"name": "node", "image": "pytorch", "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "32"}}}
    job = {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [node]}}}}}
    metadata: dict[str, Any] = {"name": "torch"} if kind.startswith("Cluster") else {"name": "torch", "namespace": "ml"}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": {"mlPolicy": {"numNodes": 2, **policy}, "template": {"spec": {"replicatedJobs": [job]}}},
    }


def _policy(obj: dict[str, Any] | None) -> dict[str, Any]:
    assert obj is not None
    policy: dict[str, Any] = obj["spec"]["mlPolicy"]
    return policy


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"torch": {}}, {"torch": {"numProcPerNode": 4}}),  # auto by default: the CPU count without GPUs
        ({"torch": {"numProcPerNode": "auto"}}, {"torch": {"numProcPerNode": 4}}),
        ({"torch": {"numProcPerNode": "gpu"}}, {"torch": {"numProcPerNode": "gpu"}}),  # torchrun counts them
        ({"torch": {"numProcPerNode": 2}}, {"torch": {"numProcPerNode": 2}}),  # the user's own
        ({"mpi": {}}, {"mpi": {"numProcPerNode": 4}}),  # 1 slot by default, raised to the GPUs
        ({"mpi": {"numProcPerNode": 3}}, {"mpi": {"numProcPerNode": 3}}),
    ],
    ids=["torch-default", "torch-auto", "torch-gpu", "torch-set", "mpi-default", "mpi-set"],
)
def test_processes_per_node_stay_what_trainer_derived_from_the_gpu_limits(
    policy: dict[str, Any], expected: dict[str, Any]
) -> None:
    result = convert(_runtime(policy), default_config())
    assert result.changed and "resourceClaims" in str(result.object)
    assert _policy(result.object) == {"numNodes": 2, **expected}
    written = [f for f in result.findings if f.rule == "trainer-processes"]
    assert len(written) == (expected != policy)


def test_a_runtime_left_with_its_gpu_limits_is_left_alone() -> None:
    result = convert(_runtime({"torch": {}}, gpus=0), default_config())
    assert _policy(result.object) == {"numNodes": 2, "torch": {}}
    assert not [f for f in result.findings if f.rule == "trainer-processes"]


def test_a_cluster_runtime_says_its_templates_belong_in_every_trainjob_namespace() -> None:
    result = convert(_runtime({"torch": {}}, kind="ClusterTrainingRuntime"), default_config())
    (warning,) = [f for f in result.findings if f.rule == "cluster-runtime-templates"]
    (template,) = result.templates
    assert warning.severity is Severity.WARNING and template["metadata"]["name"] in warning.message
    assert "namespace" not in template["metadata"]
    namespaced = convert(_runtime({"torch": {}}), default_config())
    assert not [f for f in namespaced.findings if f.rule == "cluster-runtime-templates"]
