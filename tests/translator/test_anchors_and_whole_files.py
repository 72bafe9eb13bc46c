"""YAML anchors whose target the conversion changes, and files that hold an error.

A loader hands an alias the very object of its anchor: converting through one place must not
change the others. The converted document is de-aliased where the values differ (the device count
of every pod is kept), and a file with an error is converted whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from translator_cli_support import Runner

from dra_migrate.engine import default_config
from dra_migrate.translator.renders.devices import device_view

PYTORCH_JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: trainer
            resources: &r
              limits:
                nvidia.com/gpu: 4
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: pytorch
            image: trainer
            resources: *r
"""

SHARED_CONTAINER_RESOURCES = """\
apiVersion: v1
kind: Pod
metadata:
  name: two
spec:
  containers:
  - name: a
    image: cuda
    resources: &r
      limits:
        nvidia.com/gpu: 1
  - name: b
    image: cuda
    resources: {shared}
"""

WITH_AN_ERROR = """\
apiVersion: v1
kind: Pod
metadata:
  name: fine
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Pod
metadata:
  name: half
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 0.5}}
"""


def _devices(text: str) -> dict[tuple[str, str], dict[str, str]]:
    objects = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    return {(key[3], key[4]): devices for key, devices in device_view(objects, default_config()).items()}


def _convert_in_place(run_cli: Runner, path: Path, text: str) -> tuple[int, str, list[dict[str, Any]]]:
    path.write_text(text, encoding="utf-8")
    result = run_cli("convert", "--in-place", "--report", "json", str(path))
    return result.code, path.read_text(encoding="utf-8"), json.loads(result.stderr)["findings"]


def test_an_anchor_shared_by_two_pod_templates_is_expanded(run_cli: Runner, tmp_path: Path) -> None:
    code, text, rows = _convert_in_place(run_cli, tmp_path / "job.yaml", PYTORCH_JOB)
    assert code == 0, rows
    devices = _devices(text)
    master = "spec.pytorchReplicaSpecs.Master.template.spec"
    worker = "spec.pytorchReplicaSpecs.Worker.template.spec"
    assert devices == {
        (master, "pytorch"): {"gpu.nvidia.com": "4 via claim"},
        (worker, "pytorch"): {"gpu.nvidia.com": "4 via claim"},
    }
    assert "*r" not in text and "nvidia.com/gpu: 4" not in text


@pytest.mark.parametrize("shared", ["*r", "{<<: *r}"])
def test_containers_sharing_one_resources_anchor_each_keep_their_own_devices(
    run_cli: Runner, tmp_path: Path, shared: str
) -> None:
    manifest = SHARED_CONTAINER_RESOURCES.format(shared=shared)
    code, text, rows = _convert_in_place(run_cli, tmp_path / "pod.yaml", manifest)
    assert code == 0, rows
    one = {"gpu.nvidia.com": "1 via claim"}
    assert _devices(text) == {("spec", "a"): one, ("spec", "b"): one}


def test_a_file_with_an_error_is_left_exactly_as_it_was_in_place(run_cli: Runner, tmp_path: Path) -> None:
    code, text, rows = _convert_in_place(run_cli, tmp_path / "pods.yaml", WITH_AN_ERROR)
    assert code == 2
    assert text == WITH_AN_ERROR
    assert [r["rule"] for r in rows if r["document"] is None] == ["not-written"]


def test_a_file_with_an_error_is_copied_as_it_was_to_the_output_tree(run_cli: Runner, tmp_path: Path) -> None:
    tree = tmp_path / "apps"
    tree.mkdir()
    (tree / "pods.yaml").write_text(WITH_AN_ERROR, encoding="utf-8")
    (tree / "ok.yaml").write_text(WITH_AN_ERROR.split("---")[0], encoding="utf-8")
    result = run_cli("convert", "--output-dir", str(tmp_path / "out"), str(tree))
    assert result.code == 2
    assert (tmp_path / "out" / "pods.yaml").read_text(encoding="utf-8") == WITH_AN_ERROR
    assert "resourceClaims" in (tmp_path / "out" / "ok.yaml").read_text(encoding="utf-8")


WORDS_AND_ANCHORS = """\
apiVersion: v1
kind: Pod
metadata:
  name: words
  labels:
    enabled: on
    flag: yes
    short: y
spec:
  containers:
  - name: a
    image: cuda
    env: &env
    - name: MODE
      value: off
    resources: &r
      limits:
        nvidia.com/gpu: 1
  - name: b
    image: cuda
    env: *env
    resources: *r
"""


def test_expanding_an_alias_keeps_every_other_scalar_and_alias_as_written(run_cli: Runner, tmp_path: Path) -> None:
    """`on`, `yes`, `y`, `off` are strings to kustomize (YAML 1.2) and booleans to kubectl (YAML 1.1):
    written as they were, each keeps its meaning for both. The untouched `env` alias stays an alias."""
    code, text, rows = _convert_in_place(run_cli, tmp_path / "pod.yaml", WORDS_AND_ANCHORS)
    assert code == 0, rows
    for line in ("    enabled: on\n", "    flag: yes\n", "    short: y\n", "      value: off\n", "    env: *env\n"):
        assert line in text, line
    assert "    env: &env\n" in text
    one = {"gpu.nvidia.com": "1 via claim"}
    assert _devices(text) == {("spec", "a"): one, ("spec", "b"): one}
