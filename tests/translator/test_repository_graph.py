"""The repository is the unit, whatever the arguments: every kustomization root that renders from a
changed file is built before and after (the real kustomize), one that cannot be built is refused, and
a refused root withholds exactly the files that render into it. The argument forms are the ones
pre-commit passes (staged files), a subdirectory and the top."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubectl import require_standalone_kustomize
from translator_cli_support import Runner
from trees import snapshot, write_tree

pytestmark = pytest.mark.usefixtures("kustomize")  # the real kustomize renders (conftest.py)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
      - name: server
        image: vllm
        resources:
          limits:
            nvidia.com/gpu: 2
"""

FOUR_GPUS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  template:
    spec:
      containers:
      - name: server
        resources:
          limits:
            nvidia.com/gpu: 4
"""

BASE = {"base/kustomization.yaml": "resources:\n- deploy.yaml\n", "base/deploy.yaml": DEPLOYMENT}


def _overlay(directory: str = "overlays/prod", file_name: str = "kustomization.yaml") -> dict[str, str]:
    up = "../" * len(Path(directory).parts)
    return {
        f"{directory}/{file_name}": f"resources:\n- {up}base\npatches:\n- path: gpus.yaml\n",
        f"{directory}/gpus.yaml": FOUR_GPUS,
    }


def _rows(stderr: str, rule: str) -> list[dict[str, Any]]:
    return [r for r in json.loads(stderr)["findings"] if r["rule"] == rule]


@pytest.fixture
def inside(tmp_path: Path) -> Iterator[Path]:
    """The test runs from inside a git work tree, as pre-commit does (relative paths, as typed)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(cwd)


def _refused(run_cli: Runner, root: Path, *arguments: str) -> list[dict[str, Any]]:
    before = snapshot(root)
    result = run_cli("convert", "--in-place", "--report", "json", *arguments)
    assert result.code == 2, result.stderr
    assert snapshot(root) == before, "a file was written on a refused run"
    return _rows(result.stderr, "render-mismatch") + _rows(result.stderr, "render-not-built")


@pytest.mark.parametrize(
    ("directory", "file_name"),
    [
        ("overlays/prod", "kustomization.yaml"),
        ("overlays/prod", "Kustomization"),
        (".deploy/prod", "kustomization.yml"),
    ],
    ids=["kustomization.yaml", "Kustomization", "dot-directory"],
)
def test_the_staged_base_alone_is_refused_for_the_overlay_that_patches_it(
    run_cli: Runner, inside: Path, directory: str, file_name: str
) -> None:
    """pre-commit passes `base/deploy.yaml`: the overlay patching it to 4 GPUs would render 4 device-plugin
    GPUs plus a 2-GPU claim."""
    write_tree(inside, {**BASE, **_overlay(directory, file_name)})
    mismatches = _refused(run_cli, inside, "base/deploy.yaml")
    assert {Path(r["file"]).parent.as_posix() for r in mismatches} == {directory}
    assert any(f"{directory}/gpus.yaml" in r["message"] and "were not converted" in r["message"] for r in mismatches)


@pytest.mark.parametrize("arguments", [["base/deploy.yaml", "overlays/prod/gpus.yaml"], ["."]], ids=["staged", "top"])
def test_the_base_and_patch_together_convert_and_both_roots_are_verified(
    run_cli: Runner, inside: Path, arguments: list[str]
) -> None:
    write_tree(inside, {**BASE, **_overlay()})
    result = run_cli("convert", "--in-place", "--report", "json", *arguments)
    assert result.code == 0, result.stderr
    verified = {Path(r["file"]).parent.as_posix() for r in _rows(result.stderr, "render-verified")}
    assert verified == {"base", "overlays/prod"}
    assert "resourceClaims" in (inside / "base" / "deploy.yaml").read_text()


@pytest.mark.parametrize("argument", ["base", "./base/", "base/deploy.yaml"])
def test_every_form_of_the_base_alone_is_refused_for_the_overlay(run_cli: Runner, inside: Path, argument: str) -> None:
    write_tree(inside, {**BASE, **_overlay()})
    mismatches = _refused(run_cli, inside, argument)
    assert {Path(r["file"]).parent.as_posix() for r in mismatches} == {"overlays/prod"}


def test_without_git_the_repository_can_be_named(run_cli: Runner, tmp_path: Path) -> None:
    """No git work tree: the arguments' common directory is the repository, unless --repository names it."""
    write_tree(tmp_path, {**BASE, **_overlay()})
    base = str(tmp_path / "base")
    result = run_cli("convert", "--in-place", "--report", "json", "--repository", str(tmp_path), base)
    assert result.code == 2
    assert {Path(r["file"]).parent.name for r in _rows(result.stderr, "render-mismatch")} == {"prod"}


def test_a_utf16_overlay_is_read_as_kustomize_reads_it(run_cli: Runner, inside: Path) -> None:
    overlay = _overlay()
    text = overlay.pop("overlays/prod/kustomization.yaml")
    write_tree(inside, {**BASE, **overlay, "overlays/prod/kustomization.yaml": text.encode("utf-16")})
    mismatches = _refused(run_cli, inside, ".")
    assert {Path(r["file"]).parent.as_posix() for r in mismatches} == {"overlays/prod"}


def test_a_refused_root_withholds_only_the_files_that_render_into_it(run_cli: Runner, inside: Path) -> None:
    """An unrelated application converts; the base the refused overlay patches, and the file the overlay
    lists from it directly, stay as they were."""
    write_tree(
        inside,
        {
            **BASE,
            **_overlay(),
            "other/kustomization.yaml": "resources:\n- job.yaml\n",
            "other/job.yaml": DEPLOYMENT.replace("name: infer", "name: other"),
            "direct/kustomization.yaml": (
                "resources:\n- ../base/deploy.yaml\npatches:\n- path: ../overlays/prod/gpus.yaml\n"
            ),
        },
    )
    before = snapshot(inside)
    result = run_cli("convert", "--in-place", "--report", "json", "base", "other")
    assert result.code == 2
    refused = {Path(r["file"]).parent.as_posix() for r in _rows(result.stderr, "render-mismatch")}
    assert refused == {"overlays/prod", "direct"}
    after = snapshot(inside)
    assert after["base/deploy.yaml"] == before["base/deploy.yaml"]
    assert "base/dra-migrate-templates.yaml" not in after
    assert "resourceClaims" in after["other/job.yaml"].decode()


def test_the_output_directory_holds_every_input_file(
    run_cli: Runner, inside: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Refused files are copied as they were, and an empty YAML file is copied too: the tree still builds.
    (The overlay also pulls a remote base, which verification does not fetch: it is refused.)"""
    remote = {
        "overlays/prod/kustomization.yaml": "resources:\n- ../../base\n- https://github.com/example/m//b?ref=v1\n"
    }
    write_tree(inside, {**BASE, **remote, "empty.yaml": ""})
    out = tmp_path_factory.mktemp("out")
    result = run_cli("convert", "--report", "json", "--output-dir", str(out), ".")
    assert result.code == 2
    inputs = {k: v for k, v in snapshot(inside).items() if not k.startswith(".git/")}
    assert snapshot(out) == inputs


def test_a_templates_file_is_not_created_on_a_refused_run(run_cli: Runner, inside: Path) -> None:
    write_tree(inside, {**BASE, **_overlay()})
    result = run_cli("convert", "--in-place", "--report", "json", "--templates-file", "claims.yaml", "base")
    assert result.code == 2
    assert not (inside / "claims.yaml").exists()


def test_a_root_inflating_helm_charts_without_helm_is_refused(
    run_cli: Runner, inside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HELM", raising=False)
    monkeypatch.setenv("PATH", str(inside / "no-helm-here"))
    write_tree(
        inside,
        {
            "app/kustomization.yaml": "resources:\n- deploy.yaml\nhelmCharts:\n- name: redis\n  version: 1.0.0\n",
            "app/deploy.yaml": DEPLOYMENT,
        },
    )
    (mismatch,) = _refused(run_cli, inside, "app/deploy.yaml")
    assert "helmCharts" in mismatch["message"] and "no helm" in mismatch["message"]
    assert mismatch["rule"] == "render-not-built"


def test_an_unchanged_root_is_not_built_for_a_changed_file_it_does_not_render(run_cli: Runner, inside: Path) -> None:
    """A broken kustomization elsewhere in the repository is not this run's concern."""
    write_tree(inside, {**BASE, "broken/kustomization.yaml": "resources:\n- missing.yaml\n"})
    result = run_cli("convert", "--in-place", "--report", "json", "base/deploy.yaml")
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.as_posix() for r in _rows(result.stderr, "render-verified")} == {"base"}


def test_an_exec_krm_function_runs_only_when_the_user_lets_it(
    run_cli: Runner, inside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verification never runs a root's exec function unless --enable-exec says so; then it builds it."""
    monkeypatch.setenv("DRA_MIGRATE_KUSTOMIZE", require_standalone_kustomize())
    function = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: identity\n  annotations:\n"
    function += "    config.kubernetes.io/function: |\n      exec:\n        path: ./identity.sh\n"
    write_tree(
        inside,
        {
            "app/kustomization.yaml": "resources:\n- deploy.yaml\ntransformers:\n- identity.yaml\n",
            "app/deploy.yaml": DEPLOYMENT,
            "app/identity.yaml": function,
            "app/identity.sh": "#!/bin/sh\nexec cat\n",
        },
    )
    (inside / "app" / "identity.sh").chmod(0o755)
    (mismatch,) = _refused(run_cli, inside, "app/deploy.yaml")
    assert "--enable-exec" in mismatch["message"] and mismatch["rule"] == "render-not-built"
    result = run_cli("convert", "--in-place", "--report", "json", "--enable-exec", "app/deploy.yaml")
    assert result.code == 0, result.stderr
    assert _rows(result.stderr, "render-verified")
