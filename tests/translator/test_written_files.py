"""Files the run writes besides the converted inputs are merged, never replaced, and a write that
cannot happen is an error naming the file, never a traceback nor a half-done run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from translator_cli_support import Runner

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 2}}
"""

OTHER_CLASS = """\
# classes this cluster's team keeps by hand
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: fpga.example.com  # the FPGA pool
spec:
  selectors:
  - cel: {expression: device.driver == "fpga.example.com"}
"""


def _extended(run_cli: Runner, tmp_path: Path, classes: Path, *extra: str) -> tuple[int, str]:
    pod = tmp_path / "pod.yaml"
    pod.write_text(GPU_POD, encoding="utf-8")
    result = run_cli(
        "convert",
        "--strategy",
        "extendedResource",
        "--target-version",
        "1.37",
        "--device-classes",
        str(classes),
        *extra,
        str(pod),
    )
    return result.code, result.stderr


def test_device_classes_are_merged_into_the_file_keeping_its_objects_and_comments(
    run_cli: Runner, tmp_path: Path
) -> None:
    classes = tmp_path / "classes.yaml"
    classes.write_text(OTHER_CLASS, encoding="utf-8")
    code, stderr = _extended(run_cli, tmp_path, classes)
    assert code == 0, stderr
    text = classes.read_text(encoding="utf-8")
    assert text.startswith(OTHER_CLASS)
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(text) if d]
    assert names[0] == "fpga.example.com" and len(names) == 2
    assert "extendedResourceName: nvidia.com/gpu" in text
    # a second run adds nothing
    assert _extended(run_cli, tmp_path, classes)[0] == 0
    assert classes.read_text(encoding="utf-8") == text


def test_a_device_classes_file_is_never_emptied(run_cli: Runner, tmp_path: Path) -> None:
    """No name is left to KEP-5004 (the default strategy rewrites to claims): the file stays as it was."""
    classes = tmp_path / "classes.yaml"
    classes.write_text(OTHER_CLASS, encoding="utf-8")
    pod = tmp_path / "pod.yaml"
    pod.write_text(GPU_POD, encoding="utf-8")
    assert run_cli("convert", "--device-classes", str(classes), str(pod)).code == 0
    assert classes.read_text(encoding="utf-8") == OTHER_CLASS


def test_a_device_class_edited_by_hand_is_kept_with_a_warning(run_cli: Runner, tmp_path: Path) -> None:
    classes = tmp_path / "classes.yaml"
    _extended(run_cli, tmp_path, classes)
    edited = classes.read_text(encoding="utf-8").replace("device.driver ==", 'device.driver != "x" && device.driver ==')
    classes.write_text(edited, encoding="utf-8")
    code, stderr = _extended(run_cli, tmp_path, classes, "--report", "json")
    assert code == 0
    assert [r["rule"] for r in json.loads(stderr)["findings"] if r["severity"] == "warning"] == ["device-class-kept"]
    assert classes.read_text(encoding="utf-8") == edited


@pytest.mark.parametrize("flag", ["--device-classes", "--templates-file", "--report-file", "--output-dir"])
def test_an_output_path_that_cannot_be_one_is_refused_before_converting(
    run_cli: Runner, tmp_path: Path, flag: str
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(GPU_POD, encoding="utf-8")
    if flag == "--output-dir":
        wrong = tmp_path / "a-file"
        wrong.write_text("x", encoding="utf-8")
    elif flag == "--report-file":
        wrong = tmp_path / "missing" / "report.json"
    else:
        wrong = tmp_path / "a-directory"
        wrong.mkdir()
    in_place = [] if flag == "--output-dir" else ["--in-place"]
    result = run_cli("convert", *in_place, flag, str(wrong), str(pod))
    assert result.code == 2
    assert str(wrong.name) in result.stderr and "Traceback" not in result.stderr
    assert pod.read_text(encoding="utf-8") == GPU_POD


def test_a_failing_output_tree_write_is_an_error_naming_the_file(run_cli: Runner, tmp_path: Path) -> None:
    """Root can write anywhere: a directory where the output file should go makes the write fail."""
    tree = tmp_path / "apps"
    tree.mkdir()
    (tree / "pod.yaml").write_text(GPU_POD, encoding="utf-8")
    out = tmp_path / "out"
    (out / "pod.yaml").mkdir(parents=True)
    result = run_cli("convert", "--report", "json", "--output-dir", str(out), str(tree))
    assert result.code == 2
    rows = [r for r in json.loads(result.stderr)["findings"] if r["rule"] == "not-written"]
    assert rows and "cannot write" in rows[0]["message"]


@pytest.mark.parametrize("content", [b"# caf\xe9\n", None], ids=["not-utf-8", "a-directory"])
def test_an_unreadable_templates_file_leaves_the_workloads_unchanged(
    run_cli: Runner, tmp_path: Path, content: bytes | None
) -> None:
    tree = tmp_path / "apps"
    tree.mkdir()
    (tree / "pod.yaml").write_text(GPU_POD, encoding="utf-8")
    templates = tmp_path / "templates.yaml"
    if content is None:
        templates.mkdir()
    else:
        templates.write_bytes(content)
    result = run_cli("convert", "--in-place", "--templates-file", str(templates), str(tree))
    assert result.code == 2
    assert (tree / "pod.yaml").read_text(encoding="utf-8") == GPU_POD
    assert "no problems" not in result.stderr


@pytest.mark.parametrize("verify", [[], ["--no-verify-render"]], ids=["verified", "not-verified"])
def test_a_file_with_an_error_leaves_its_whole_unit_unwritten(
    run_cli: Runner, tmp_path: Path, verify: list[str]
) -> None:
    """A kustomization's file holds a convertible pod and one with an error: the file stays as it was, and
    neither the templates file its good pod would need nor the kustomization's edit is written."""
    too_many = GPU_POD.replace("trainer", "huge").replace("gpu: 2", "gpu: 33")
    (tmp_path / "pods.yaml").write_text(GPU_POD + "---\n" + too_many)
    (tmp_path / "kustomization.yaml").write_text("resources:\n- pods.yaml\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    result = run_cli("convert", "--in-place", "--report", "json", *verify, str(tmp_path))
    assert result.code == 2
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    not_written = {Path(r["file"]).name for r in json.loads(result.stderr)["findings"] if r["rule"] == "not-written"}
    assert {"pods.yaml", "kustomization.yaml", "dra-migrate-templates.yaml"} <= not_written
