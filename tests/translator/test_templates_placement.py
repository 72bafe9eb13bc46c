"""Generated ResourceClaimTemplates reach every unit a user applies on its own, and a templates file
is merged, never replaced. Kustomize output is checked with the real `kubectl kustomize`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubectl import require_kubectl
from translator_cli_support import Runner


def _deployment(name: str, count: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: main
        image: vllm/vllm-openai
        resources:
          limits:
            nvidia.com/gpu: {count}
"""


def _pod(name: str, count: int) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml}}
spec:
  containers:
  - name: main
    image: cuda
    resources: {{limits: {{nvidia.com/gpu: {count}}}}}
"""


PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: main
        resources:
          limits:
            nvidia.com/gpu: 2
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _templates(docs: list[dict[str, Any]]) -> set[str]:
    return {d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate"}


def _references(docs: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            name = node.get("resourceClaimTemplateName")
            if isinstance(name, str):
                found.add(name)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(docs)
    return found


def _kustomize(kubectl: Path, directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run([str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return _documents(done.stdout)


@pytest.fixture
def kustomize_tree(tmp_path: Path) -> Path:
    """A base and two overlays, one patching the GPU count, plus a file no kustomization lists."""
    root = tmp_path / "deploy"
    _write(
        root,
        {
            "base/kustomization.yaml": "# the base\nresources:\n- deployment.yaml\n- service.yaml\n",
            "base/deployment.yaml": _deployment("vllm", 1),
            "base/service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: vllm}\nspec: {ports: [{port: 80}]}\n",
            "overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n",
            "overlays/prod/gpus.yaml": PATCH,
            "overlays/dev/kustomization.yaml": "resources:\n- ../../base\n",
            "standalone/pod.yaml": _pod("loose", 4),
        },
    )
    return root


def test_every_kustomization_and_every_loose_file_reaches_its_templates(run_cli: Runner, kustomize_tree: Path) -> None:
    kubectl = require_kubectl()
    result = run_cli("convert", "--in-place", str(kustomize_tree))
    assert result.code == 0, result.stderr
    for unit in ("base", "overlays/prod", "overlays/dev"):
        docs = _kustomize(kubectl, kustomize_tree / unit)
        assert _references(docs), unit
        assert _references(docs) <= _templates(docs), f"{unit}: references without templates"
    loose = _documents((kustomize_tree / "standalone/pod.yaml").read_text())
    assert _references(loose) and _references(loose) <= _templates(loose)
    # the base's template is written once, in the base; the overlay holds only its own
    assert (kustomize_tree / "base/kustomization.yaml").read_text().startswith("# the base\n")
    assert "dra-migrate-templates.yaml" in (kustomize_tree / "overlays/prod/kustomization.yaml").read_text()
    assert not (kustomize_tree / "overlays/dev/dra-migrate-templates.yaml").exists()
    assert "ResourceClaimTemplate" not in (kustomize_tree / "overlays/prod/gpus.yaml").read_text()
    # a second run finds nothing left to do
    assert run_cli("diff", str(kustomize_tree)).code == 0


def test_diff_previews_the_templates_file_and_the_kustomization_edit(run_cli: Runner, kustomize_tree: Path) -> None:
    result = run_cli("diff", str(kustomize_tree))
    assert result.code == 1
    assert "+++ b/" in result.stdout and "dra-migrate-templates.yaml" in result.stdout
    assert "+- dra-migrate-templates.yaml" in result.stdout


def test_per_file_placement_makes_each_file_complete(run_cli: Runner, kustomize_tree: Path) -> None:
    result = run_cli("convert", "--in-place", "--template-placement", "per-file", str(kustomize_tree))
    assert result.code == 0, result.stderr
    for path in (kustomize_tree / "base/deployment.yaml", kustomize_tree / "standalone/pod.yaml"):
        docs = _documents(path.read_text())
        assert _references(docs) and _references(docs) <= _templates(docs), path


def test_name_prefix_that_breaks_references_is_reported(run_cli: Runner, kustomize_tree: Path) -> None:
    kustomization = kustomize_tree / "overlays/dev/kustomization.yaml"
    kustomization.write_text("namePrefix: dev-\nresources:\n- ../../base\n")
    result = run_cli("convert", "--in-place", "--report", "json", str(kustomize_tree))
    rows = [r for r in json.loads(result.stderr)["findings"] if r["rule"] == "template-reference"]
    assert rows and "namePrefix" in rows[0]["message"] and rows[0]["severity"] == "warning"


def test_templates_file_is_merged_across_runs_and_never_truncated(run_cli: Runner, tmp_path: Path) -> None:
    tree = tmp_path / "apps"
    templates = tree / "templates.yaml"  # inside the tree: also read as an input on the second run
    _write(tree, {"a.yaml": _pod("a", 1)})
    assert run_cli("convert", "--in-place", "--templates-file", str(templates), str(tree)).code == 0
    first = _templates(_documents(templates.read_text()))
    assert len(first) == 1
    _write(tree, {"b.yaml": _pod("b", 2)})
    result = run_cli("convert", "--in-place", "--templates-file", str(templates), str(tree))
    assert result.code == 0, result.stderr
    both = _templates(_documents(templates.read_text()))
    assert first < both and len(both) == 2
    for name in ("a.yaml", "b.yaml"):
        assert _references(_documents((tree / name).read_text())) <= both


def test_templates_file_conflict_is_an_error_and_keeps_the_file(run_cli: Runner, tmp_path: Path) -> None:
    tree = tmp_path / "apps"
    templates = tmp_path / "templates.yaml"
    _write(tree, {"a.yaml": _pod("a", 1)})
    run_cli("convert", "--in-place", "--templates-file", str(templates), str(tree))
    edited = templates.read_text().replace("count: 1", "count: 3")
    templates.write_text(edited)
    _write(tree, {"c.yaml": _pod("c", 1)})
    result = run_cli("convert", "--in-place", "--report", "json", "--templates-file", str(templates), str(tree))
    assert result.code == 2
    rows = [r for r in json.loads(result.stderr)["findings"] if r["rule"] == "template-conflict"]
    assert rows and rows[0]["severity"] == "error"
    assert templates.read_text() == edited
