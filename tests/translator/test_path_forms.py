"""Every way of naming the same tree gives the same run: relative, absolute, `./`, `../`, a trailing
slash, through a symbolic link to a parent directory, and `.` from inside the tree. Checked for
`convert` to stdout, `--output-dir`, `--in-place` and `diff`, on a kustomization whose files need
templates (the templates file is found through the file system, not typed by the user)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from translator_cli_support import CliResult, Runner
from trees import snapshot as _files_bytes

TREE = {
    "base/kustomization.yaml": "# the base\nresources:\n- deployment.yaml\n",
    "base/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: main
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 2  # two GPUs
""",
    "overlays/prod/kustomization.yaml": "resources:\n- ../../base\n",
    "loose/pod.yaml": """\
apiVersion: v1
kind: Pod
metadata: {name: loose}
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 1}}
""",
}

# (name, working directory relative to the sandbox, the path typed): the tree is sandbox/real/tree,
# and sandbox/link is a symbolic link to sandbox/real.
FORMS: list[tuple[str, str, Callable[[Path], str]]] = [
    ("relative", "real", lambda sandbox: "tree"),
    ("trailing-slash", "real", lambda sandbox: "tree/"),
    ("dot-slash", "real", lambda sandbox: "./tree"),
    ("dot-dot", "real/elsewhere", lambda sandbox: "../tree"),
    ("absolute", "real", lambda sandbox: str(sandbox / "real" / "tree")),
    ("absolute-through-link", "real", lambda sandbox: str(sandbox / "link" / "tree")),
    ("relative-through-link", ".", lambda sandbox: "link/tree"),
    ("inside-link", "link/tree", lambda sandbox: "."),
    ("inside", "real/tree", lambda sandbox: "."),
]
MODES = ("stdout", "output-dir", "in-place", "diff")


def _lay_out(sandbox: Path) -> Path:
    tree = sandbox / "real" / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    for name, text in TREE.items():
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (sandbox / "real" / "elsewhere").mkdir(exist_ok=True)
    if not (sandbox / "link").exists():
        (sandbox / "link").symlink_to(sandbox / "real", target_is_directory=True)
    return tree


def _files(root: Path) -> dict[str, str]:
    return {name: data.decode("utf-8") for name, data in _files_bytes(root).items()}


def _tree_path(display: str, cwd: Path, tree: Path) -> str:
    """A path the run printed, as the file's place in the tree (the path text is what may differ)."""
    return (cwd / display).resolve().relative_to(tree.resolve()).as_posix()


def _normalised(result: CliResult, cwd: Path, tree: Path, mode: str) -> dict[str, Any]:
    report = json.loads(result.stderr)
    for row in report["findings"]:
        if row["file"] is not None:
            row["file"] = _tree_path(row["file"], cwd, tree)
    out = result.stdout
    if mode == "diff":  # the a/ and b/ headers name the files as the user typed them
        lines = []
        for line in out.splitlines():
            if line.startswith(("--- a/", "+++ b/")):
                line = line[:6] + _tree_path(line[6:], cwd, tree)
            lines.append(line)
        out = "\n".join(lines)
    return {"code": result.code, "stdout": out, "report": report}


def _run(run_cli: Runner, sandbox: Path, form: tuple[str, str, Callable[[Path], str]], mode: str) -> dict[str, Any]:
    tree = _lay_out(sandbox)
    _, directory, typed = form
    cwd = sandbox / directory
    out = sandbox / "out"
    if out.exists():
        shutil.rmtree(out)
    arguments = {
        "stdout": ["convert"],
        "output-dir": ["convert", "--output-dir", str(out)],
        "in-place": ["convert", "--in-place"],
        "diff": ["diff"],
    }[mode]
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        result = run_cli(*arguments, "--report", "json", typed(sandbox))
    finally:
        os.chdir(previous)
    outcome = _normalised(result, cwd, tree, mode)
    if mode == "output-dir":
        outcome["files"] = _files(out)
    if mode == "in-place":
        outcome["files"] = _files(tree)
    return outcome


@pytest.mark.parametrize("mode", MODES)
def test_every_path_form_gives_the_same_run(run_cli: Runner, tmp_path: Path, mode: str) -> None:
    reference = _run(run_cli, tmp_path, FORMS[0], mode)
    assert reference["code"] == (1 if mode == "diff" else 0), reference
    assert "dra-migrate-templates.yaml" in json.dumps(reference) or mode == "stdout"
    for form in FORMS[1:]:
        assert _run(run_cli, tmp_path, form, mode) == reference, form[0]


def test_output_tree_mirrors_the_input_tree(run_cli: Runner, tmp_path: Path) -> None:
    outcome = _run(run_cli, tmp_path, FORMS[0], "output-dir")
    files = outcome["files"]
    assert set(files) == {
        "base/deployment.yaml",
        "base/dra-migrate-templates.yaml",
        "base/kustomization.yaml",
        "loose/pod.yaml",
        "overlays/prod/kustomization.yaml",
    }
    assert "- dra-migrate-templates.yaml" in files["base/kustomization.yaml"]
    assert "kind: ResourceClaimTemplate" in files["base/dra-migrate-templates.yaml"]
    assert "kind: ResourceClaimTemplate" in files["loose/pod.yaml"]


@pytest.mark.parametrize("mode", ["in-place", "output-dir"])
def test_a_unit_whose_templates_file_cannot_be_written_is_not_written(
    run_cli: Runner, tmp_path: Path, mode: str
) -> None:
    """The kustomization's templates file cannot be read: its workloads would reference templates that
    are never written, so none of the unit is written; other units are."""
    tree = _lay_out(tmp_path)
    (tree / "base" / "dra-migrate-templates.yaml").write_bytes(b"kind: List\n# caf\xe9\n")
    before = _files_bytes(tree)
    out = tmp_path / "out"
    arguments = ["--in-place"] if mode == "in-place" else ["--output-dir", str(out)]
    result = run_cli("convert", *arguments, "--report", "json", str(tree))
    assert result.code == 2
    rows = json.loads(result.stderr)["findings"]
    not_written = {Path(r["file"]).name for r in rows if r["rule"] == "not-written"}
    assert not_written == {"deployment.yaml"}
    assert any(r["severity"] == "error" and r["file"].endswith("dra-migrate-templates.yaml") for r in rows)
    written = _files_bytes(tree) if mode == "in-place" else _files_bytes(out)
    for name in ("base/deployment.yaml", "base/kustomization.yaml"):
        assert written.get(name, before[name]) == before[name], name
    assert "kind: ResourceClaimTemplate" in written["loose/pod.yaml"].decode()
