"""`--output-dir` mirrors the input tree: every input keeps its path below the common directory of
the arguments, every other file of a walked directory is copied as it is (so `kustomize build` of
the output works), and no input becomes an empty placeholder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kubectl import require_kubectl
from translator_cli_support import Runner
from trees import snapshot as _files
from trees import write_tree as _write

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: POD}
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_same_named_files_of_two_arguments_keep_their_paths(run_cli: Runner, tmp_path: Path) -> None:
    _write(tmp_path, {"a/gpu.yaml": GPU_POD.replace("POD", "a"), "b/gpu.yaml": GPU_POD.replace("POD", "b")})
    out = tmp_path / "out"
    result = run_cli("convert", "--output-dir", str(out), str(tmp_path / "a" / "gpu.yaml"), str(tmp_path / "b"))
    assert result.code == 0, result.stderr
    files = _files(out)
    assert set(files) == {"a/gpu.yaml", "b/gpu.yaml"}
    assert b"name: a" in files["a/gpu.yaml"] and b"name: b" in files["b/gpu.yaml"]


def test_two_overlays_keep_their_own_kustomizations(run_cli: Runner, tmp_path: Path) -> None:
    names = ("prod", "dev")
    overlays = {f"overlays/{name}/kustomization.yaml": f"resources:\n- pod.yaml\nnamespace: {name}\n" for name in names}
    pods = {f"overlays/{name}/pod.yaml": GPU_POD.replace("POD", name) for name in names}
    _write(tmp_path, {**overlays, **pods})
    out = tmp_path / "out"
    overlay = tmp_path / "overlays"
    assert run_cli("convert", "--output-dir", str(out), str(overlay / "prod"), str(overlay / "dev")).code == 0
    files = _files(out)
    for name in ("prod", "dev"):
        assert f"namespace: {name}".encode() in files[f"{name}/kustomization.yaml"]
        assert b"kind: ResourceClaimTemplate" in files[f"{name}/dra-migrate-templates.yaml"]


def test_the_output_tree_builds_with_kustomize(run_cli: Runner, tmp_path: Path) -> None:
    """Generator sources, `.env` files and an extensionless `Kustomization` are copied as they are."""
    kubectl = require_kubectl()
    tree = tmp_path / "app"
    _write(
        tree,
        {
            "Kustomization": "resources:\n- pod.yaml\nconfigMapGenerator:\n- name: cfg\n  files: [settings.conf]\n"
            "  envs: [.env]\n",
            "pod.yaml": GPU_POD.replace("POD", "trainer"),
            "settings.conf": "threads=4\n",
            ".env": "MODE=train\n",
        },
    )
    out = tmp_path / "out"
    result = run_cli("convert", "--output-dir", str(out), str(tree))
    assert result.code == 0, result.stderr
    built = subprocess.run([str(kubectl), "kustomize", str(out)], capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stderr
    assert "threads=4" in built.stdout and "MODE: train" in built.stdout
    assert "kind: ResourceClaimTemplate" in built.stdout


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("# caf\xe9\n".encode("latin-1") + GPU_POD.encode(), id="latin-1"),
        pytest.param(GPU_POD.encode("utf-16"), id="utf-16"),
        pytest.param(GPU_POD.encode() + b"#" * (2 << 20) + b"\n", id="over-max-file-size"),
    ],
)
def test_an_input_it_cannot_read_is_copied_as_it_is(run_cli: Runner, tmp_path: Path, content: bytes) -> None:
    tree = tmp_path / "apps"
    _write(tree, {"odd.yaml": content, "fine.yaml": GPU_POD.replace("POD", "fine")})
    out = tmp_path / "out"
    result = run_cli("convert", "--max-file-size", "1", "--output-dir", str(out), str(tree))
    assert result.code == 2
    assert (out / "odd.yaml").read_bytes() == content
    assert b"resourceClaims" in (out / "fine.yaml").read_bytes()


def test_a_broken_link_leaves_no_placeholder(run_cli: Runner, tmp_path: Path) -> None:
    tree = tmp_path / "apps"
    _write(tree, {"fine.yaml": GPU_POD.replace("POD", "fine")})
    (tree / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    out = tmp_path / "out"
    result = run_cli("convert", "--output-dir", str(out), str(tree))
    assert result.code == 2
    assert not (out / "gone.yaml").exists()
    assert set(_files(out)) == {"fine.yaml"}


def test_copies_keep_their_sources_permissions(run_cli: Runner, tmp_path: Path) -> None:
    """An exec KRM function stays executable in the output tree, converted files keep their mode too."""
    _write(tmp_path, {"in/gpu.yaml": GPU_POD.replace("POD", "a"), "in/fn/run-me": "#!/bin/sh\ncat\n"})
    (tmp_path / "in" / "fn" / "run-me").chmod(0o755)
    (tmp_path / "in" / "gpu.yaml").chmod(0o600)
    out = tmp_path / "out"
    result = run_cli("convert", "--output-dir", str(out), str(tmp_path / "in"))
    assert result.code == 0, result.stderr
    assert (out / "fn" / "run-me").stat().st_mode & 0o777 == 0o755
    assert (out / "gpu.yaml").stat().st_mode & 0o777 == 0o600
    assert "resourceClaims" in (out / "gpu.yaml").read_text()


@pytest.mark.parametrize("output", ["in", "in/out"])
def test_an_output_directory_inside_an_input_directory_is_refused(run_cli: Runner, tmp_path: Path, output: str) -> None:
    """Its copies would overwrite the sources, or be read as inputs by the next run (out/out/...)."""
    _write(tmp_path, {"in/gpu.yaml": GPU_POD.replace("POD", "a")})
    before = _files(tmp_path)
    result = run_cli("convert", "--output-dir", str(tmp_path / output), str(tmp_path / "in"))
    assert result.code == 2
    assert "inside the input directory" in result.stderr
    assert _files(tmp_path) == before
