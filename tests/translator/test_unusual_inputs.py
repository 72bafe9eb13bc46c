"""Inputs a repository holds besides plain manifests: a FIFO, a linked directory, JSON beside YAML,
a KRM function config with a number, a hand-edited template, a claim with a status. None of them may
hang the run, be skipped without a word, or be changed without a finding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubectl import kubectl_read_all, require_kubectl
from translator_cli_support import Runner

from dra_migrate.engine import default_config
from dra_migrate.translator.krm import transform

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def _cli(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_migrate", *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
    )


def test_a_fifo_in_a_walked_tree_is_skipped_not_waited_for(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(GPU_POD.replace("NAME", "p"), encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.yaml")
    done = _cli("diff", "--report", "json", ".", cwd=tmp_path)  # the timeout fails the test if it blocks
    assert done.returncode == 1, done.stderr
    rows = json.loads(done.stderr)["findings"]
    assert any(r["file"] == "pipe.yaml" and r["rule"] == "skipped" and "FIFO" in r["message"] for r in rows)


def test_a_linked_directory_is_followed_as_kustomize_follows_it(run_cli: Runner, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "pod.yaml").write_text(GPU_POD.replace("NAME", "linked"), encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "shared").symlink_to(shared, target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)  # a link back into the tree: walked once
    result = run_cli("convert", str(tree))
    assert result.code == 0, result.stderr
    assert "name: linked" in result.stdout and "resourceClaims" in result.stdout
    assert result.stdout.count("name: linked") == 1


def test_json_and_yaml_printed_together_are_one_stream_kubectl_reads(run_cli: Runner, tmp_path: Path) -> None:
    kubectl = require_kubectl()
    pod = yaml.safe_load(GPU_POD.replace("NAME", "from-json"))
    (tmp_path / "a.json").write_text(json.dumps(pod, indent=2) + "\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text(GPU_POD.replace("NAME", "from-yaml"), encoding="utf-8")
    result = run_cli("convert", str(tmp_path / "a.json"), str(tmp_path / "b.yaml"))
    assert result.code == 0, result.stderr
    # kubectl up to 1.33 reads a stream whose first character is `{` as one JSON value and fails at `---`
    assert not result.stdout.lstrip().startswith("{")
    names = {(o["kind"], o["metadata"]["name"]) for o in kubectl_read_all(kubectl, result.stdout)}
    assert {("Pod", "from-json"), ("Pod", "from-yaml")} <= names
    alone = run_cli("convert", str(tmp_path / "a.json"))
    assert json.loads(alone.stdout)["kind"] == "List"  # one JSON file alone still prints plain JSON


def test_a_krm_target_version_written_as_a_number_is_a_clear_error(tmp_path: Path) -> None:
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [],
        "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"targetVersion": 1.30}},
    }
    done = _cli("krm", cwd=tmp_path, stdin=json.dumps(resource_list))
    assert done.returncode == 2
    assert "targetVersion" in done.stderr and '"1.34"' in done.stderr and "Traceback" not in done.stderr


def test_a_krm_item_whose_template_name_is_taken_is_left_as_it_came() -> None:
    pod: dict[str, Any] = yaml.safe_load(GPU_POD.replace("NAME", "p"))
    first, _ = transform([pod], default_config())
    template = next(i for i in first if i["kind"] == "ResourceClaimTemplate")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3  # edited by hand
    out, results = transform([pod, template], default_config())
    assert out[0] == pod
    errors = [r for r in results if r["severity"] == "error"]
    assert len(errors) == 1 and "ResourceClaimTemplate" in errors[0]["message"]
    assert len(out) == 2


def test_a_dropped_claim_status_is_a_warning(run_cli: Runner, tmp_path: Path) -> None:
    claim = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, deviceClassName: gpu.nvidia.com}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.nvidia.com, pool: node-a, device: gpu-0}]
"""
    (tmp_path / "claim.yaml").write_text(claim, encoding="utf-8")
    result = run_cli("convert", "--report", "json", str(tmp_path / "claim.yaml"))
    assert result.code == 0
    rows = json.loads(result.stderr)["findings"]
    assert [(r["rule"], r["severity"]) for r in rows if r["severity"] != "info"] == [("status-dropped", "warning")]
    assert "status" not in yaml.safe_load(result.stdout)
