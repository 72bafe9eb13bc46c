"""Kubeflow Trainer derives processes per node from the trainer's GPU limits; claims leave nothing to derive.

Trainer's runtime (pkg/runtime/runtime.go, ExtractResourcePerNodeFromRuntime and GetNumGPUPerNode)
reads the `node` container of the replicated job named `node` (or labelled as the trainer ancestor)
and counts the first resource whose name contains "gpu", in its requests, else its limits. The torch
plugin turns `numProcPerNode: auto` (the default) into the CPU count when it finds no GPU, and the MPI
plugin raises the default of 1 slot to the GPU count. A runtime whose node container's GPU limits
became claims would therefore start one process per CPU (torch) or one slot (MPI); the old count is
written into its mlPolicy, which Trainer then uses as it would have used the derived one, unless the
runtime set its own.

A ClusterTrainingRuntime is cluster-scoped but its pods run in each TrainJob's namespace, where the
ResourceClaimTemplates they reference must exist.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.findings import Findings, json_path
from dra_migrate.engine.quantity import QuantityError, device_count
from dra_migrate.engine.workloads import iter_path

GROUP = "trainer.kubeflow.org"
KINDS = frozenset({"TrainingRuntime", "ClusterTrainingRuntime"})
_NODE = "node"
_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
_TRAINER = "trainer"
_JOBS = ("spec", "template", "spec", "replicatedJobs", "*")  # paths within a runtime, and within a job
_LABELS = ("template", "metadata", "labels")
_CONTAINERS = ("template", "spec", "template", "spec", "containers", "*")


def _mapping(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _node_resources(runtime: dict[str, Any]) -> dict[str, Any]:
    for _, job in iter_path(runtime, _JOBS):
        labels = next((found for _, found in iter_path(job, _LABELS)), {})
        if job.get("name") != _NODE and labels.get(_ANCESTOR_LABEL) != _TRAINER:
            continue
        for _, container in iter_path(job, _CONTAINERS):
            if container.get("name") == _NODE:
                return _mapping(container, "resources")
    return {}


def _gpus(resources: dict[str, Any]) -> int:
    for section in ("requests", "limits"):
        for name, value in sorted(_mapping(resources, section).items()):
            if "gpu" in str(name).lower():
                try:
                    return device_count(value)
                except QuantityError:
                    return 0
    return 0


def keep_trainer_process_counts(original: dict[str, Any], converted: dict[str, Any], findings: Findings) -> None:
    """Write the node container's old GPU count into the converted runtime's mlPolicy where Trainer
    would have derived its processes from it."""
    old, new = _gpus(_node_resources(original)), _gpus(_node_resources(converted))
    if old <= 0 or new > 0:
        return
    policy = _mapping(_mapping(converted, "spec"), "mlPolicy")
    torch, mpi = _mapping(policy, "torch"), _mapping(policy, "mpi")
    reason = f"as Trainer derived it from the node container's GPUs ({old}), which are now claims"
    if "torch" in policy and torch.get("numProcPerNode", "auto") == "auto":
        policy["torch"] = {**torch, "numProcPerNode": old}
        findings.info(
            "trainer-processes",
            json_path("spec", "mlPolicy", "torch", "numProcPerNode"),
            f"{old} processes per node, {reason}",
        )
    if "mpi" in policy and mpi.get("numProcPerNode", 1) == 1 and old > 1:
        policy["mpi"] = {**mpi, "numProcPerNode": old}
        findings.info(
            "trainer-processes", json_path("spec", "mlPolicy", "mpi", "numProcPerNode"), f"{old} slots, {reason}"
        )


def cluster_runtime_templates(templates: list[dict[str, Any]], findings: Findings) -> None:
    names = sorted({str(t.get("metadata", {}).get("name")) for t in templates})
    findings.warning(
        "cluster-runtime-templates",
        "",
        "a ClusterTrainingRuntime's pods run in each TrainJob's namespace: create the ResourceClaimTemplate"
        f"{'s' if len(names) > 1 else ''} {', '.join(names)} in every namespace whose TrainJobs use this runtime",
    )
