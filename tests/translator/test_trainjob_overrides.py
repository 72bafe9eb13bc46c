"""Kubeflow Trainer: a TrainJob whose `resourcesPerNode` sets the node container's resources over a
runtime the run would convert to claims. Trainer rebuilds that container's resources from limits and
requests only (kubeflow/trainer pkg/runtime/core/trainingruntime.go), dropping the claims, so the pair
has no exact DRA form: the run refuses the runtime with an error naming the TrainJob and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from translator_cli_support import Runner
from trees import snapshot, write_tree

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: torch, namespace: ml}
spec:
  mlPolicy: {numNodes: 2, torch: {numProcPerNode: 2}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: pytorch
                  resources: {limits: {nvidia.com/gpu: 2}}
"""


def _trainjob(resources: str | None, runtime_kind: str = "TrainingRuntime") -> str:
    trainer = f"  trainer:\n    resourcesPerNode: {resources}\n" if resources is not None else ""
    return (
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: fine-tune, namespace: ml}\n"
        f"spec:\n  runtimeRef: {{name: torch, kind: {runtime_kind}}}\n{trainer}"
    )


@pytest.mark.parametrize(
    "resources",
    ["{limits: {nvidia.com/gpu: 2}}", "{requests: {cpu: 8}}"],
    ids=["gpus-per-node", "cpus-only-still-drops-the-claims"],
)
def test_a_runtime_a_trainjob_overrides_is_refused_saying_why(run_cli: Runner, tmp_path: Path, resources: str) -> None:
    write_tree(tmp_path, {"runtime.yaml": RUNTIME, "jobs/train.yaml": _trainjob(resources)})
    before = snapshot(tmp_path)
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 2, result.stderr
    assert snapshot(tmp_path) == before
    errors = [r["message"] for r in json.loads(result.stderr)["findings"] if r["severity"] == "error"]
    assert any("TrainJob ml/fine-tune" in m and "resourcesPerNode" in m and "claims" in m for m in errors), errors


def test_the_rendered_stream_of_a_post_renderer_is_refused_too(run_cli: Runner) -> None:
    result = run_cli("convert", "-", stdin=RUNTIME + "---\n" + _trainjob("{limits: {nvidia.com/gpu: 2}}"))
    assert result.code == 2 and "TrainJob ml/fine-tune" in result.stderr


@pytest.mark.parametrize(
    "trainjob",
    [_trainjob(None), _trainjob("{limits: {nvidia.com/gpu: 2}}", runtime_kind="ClusterTrainingRuntime")],
    ids=["no-resources-per-node", "another-runtime"],
)
def test_a_runtime_no_trainjob_overrides_converts(run_cli: Runner, tmp_path: Path, trainjob: str) -> None:
    write_tree(tmp_path, {"runtime.yaml": RUNTIME, "jobs/train.yaml": trainjob})
    result = run_cli("convert", "--in-place", str(tmp_path))
    assert result.code == 0, result.stderr
    assert "resourceClaims" in (tmp_path / "runtime.yaml").read_text()


def test_the_krm_function_refuses_the_runtime_too(run_cli: Runner) -> None:
    items = "".join(
        "- " + document.replace("\n", "\n  ").rstrip() + "\n"
        for document in (RUNTIME, _trainjob("{requests: {cpu: 8}}"))
    )
    result = run_cli("krm", stdin=f"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}")
    assert "TrainJob ml/fine-tune" in result.stdout and "nvidia.com/gpu: 2" in result.stdout
