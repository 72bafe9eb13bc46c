"""The translator's command line: inputs, outputs, exit codes, reports and error handling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from translator_cli_support import Runner

GPU_POD = """\
# leading comment
apiVersion: v1
kind: Pod
metadata:
  name: gpu
  namespace: ml
spec:
  containers:
  - name: main   # the app
    image: cuda:12
    resources:
      limits:
        nvidia.com/gpu: 2 # two GPUs
        memory: 1Gi
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}   # flow style stays
data:
  key: 'single quoted'
"""


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_convert_stdin_to_stdout_adds_template_and_keeps_comments(run_cli: Runner) -> None:
    result = run_cli("convert", "-", stdin=GPU_POD)
    assert result.code == 0, result.stderr
    docs = _docs(result.stdout)
    pod, template = docs
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"memory": "1Gi"}
    assert container["resources"]["claims"] == [{"name": "main-gpu"}]
    assert pod["spec"]["resourceClaims"] == [
        {"name": "main-gpu", "resourceClaimTemplateName": template["metadata"]["name"]}
    ]
    assert template["metadata"]["namespace"] == "ml"
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    for comment in ("# leading comment", "# the app"):
        assert comment in result.stdout


def test_untouched_documents_are_byte_identical(run_cli: Runner, tmp_path: Path) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(CONFIGMAP + "---\n" + GPU_POD)
    result = run_cli("convert", str(source))
    assert result.code == 0
    assert result.stdout.startswith(CONFIGMAP + "---\n")


def test_diff_exit_codes(run_cli: Runner, tmp_path: Path) -> None:
    clean = tmp_path / "clean.yaml"
    clean.write_text(CONFIGMAP)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU_POD)
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")

    nothing = run_cli("diff", str(clean))
    assert (nothing.code, nothing.stdout) == (0, "")
    changes = run_cli("diff", str(gpu))
    assert changes.code == 1
    assert f"--- a/{gpu}" in changes.stdout and "-        nvidia.com/gpu: 2 # two GPUs" in changes.stdout
    assert run_cli("diff", str(broken)).code == 2


def test_invalid_yaml_names_file_and_line_without_traceback(run_cli: Runner, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
    result = run_cli("convert", "--report", "text", str(broken))
    assert result.code == 2
    assert str(broken) in result.stderr and "line" in result.stderr
    assert "Traceback" not in result.stderr


def test_json_in_json_out_with_same_indentation(run_cli: Runner, tmp_path: Path) -> None:
    pod = yaml.safe_load(GPU_POD)
    source = tmp_path / "pod.json"
    source.write_text(json.dumps(pod, indent=4) + "\n")
    out_dir = tmp_path / "out"
    assert run_cli("convert", "--output-dir", str(out_dir), str(source)).code == 0
    text = (out_dir / "pod.json").read_text()
    converted = json.loads(text)
    assert converted["kind"] == "List"  # the object and its template travel together
    assert [i["kind"] for i in converted["items"]] == ["Pod", "ResourceClaimTemplate"]
    assert text.startswith('{\n    "')


def test_output_dir_mirrors_tree_and_in_place_rewrites_only_changed(run_cli: Runner, tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "apps").mkdir(parents=True)
    (tree / "apps" / "gpu.yaml").write_text(GPU_POD)
    (tree / "settings.yml").write_text(CONFIGMAP)
    (tree / "README.md").write_text("not yaml")
    out = tmp_path / "out"
    assert run_cli("convert", "--output-dir", str(out), str(tree)).code == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "README.md",  # copied as it is: an output tree holds every file of the input tree
        "apps/gpu.yaml",
        "settings.yml",
    ]
    assert (out / "settings.yml").read_text() == CONFIGMAP
    assert (out / "README.md").read_text() == "not yaml"

    before = (tree / "settings.yml").stat().st_mtime_ns
    assert run_cli("convert", "--in-place", "--exclude", "settings.yml", str(tree)).code == 0
    assert "resourceClaims" in (tree / "apps" / "gpu.yaml").read_text()
    assert (tree / "settings.yml").stat().st_mtime_ns == before
    again = run_cli("diff", str(tree))
    assert again.code == 0, again.stdout  # idempotent: converting the output changes nothing


def test_in_place_failure_leaves_file_intact(run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "gpu.yaml"
    target.write_text(GPU_POD)

    def refuse(self: Path, other: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", refuse)
    result = run_cli("convert", "--in-place", str(target))
    assert result.code == 2
    assert "No space left on" in result.stderr and "Traceback" not in result.stderr
    assert target.read_text() == GPU_POD
    assert [p.name for p in tmp_path.iterdir()] == ["gpu.yaml"]  # no temporary file left


def test_templates_deduplicated_across_files_and_templates_file(run_cli: Runner, tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(GPU_POD.replace("name: gpu", f"name: {name[0]}"))
    inline = run_cli("convert", str(tmp_path))
    kinds = [d["kind"] for d in _docs(inline.stdout)]
    assert kinds == ["Pod", "ResourceClaimTemplate", "Pod"]
    templates = tmp_path / "templates.yaml"
    separate = run_cli("convert", "--templates-file", str(templates), str(tmp_path / "a.yaml"))
    assert [d["kind"] for d in _docs(separate.stdout)] == ["Pod"]
    assert [d["kind"] for d in _docs(templates.read_text())] == ["ResourceClaimTemplate"]


def test_namespace_less_workload_gets_namespace_less_template(run_cli: Runner) -> None:
    text = GPU_POD.replace("  namespace: ml\n", "")
    _, template = _docs(run_cli("convert", "-", stdin=text).stdout)
    assert "namespace" not in template["metadata"]


def test_existing_templates_are_not_emitted_again(run_cli: Runner, tmp_path: Path) -> None:
    first = run_cli("convert", "-", stdin=GPU_POD).stdout
    template = _docs(first)[1]
    (tmp_path / "templates.yaml").write_text(yaml.safe_dump(template))
    (tmp_path / "pod.yaml").write_text(GPU_POD)
    kinds = [
        d["kind"]
        for d in _docs(run_cli("convert", str(tmp_path / "pod.yaml"), str(tmp_path / "templates.yaml")).stdout)
    ]
    assert kinds.count("ResourceClaimTemplate") == 1


def test_json_report_goes_to_report_file_not_output(run_cli: Runner, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = run_cli("convert", "--report", "json", "--report-file", str(report), "-", stdin=GPU_POD)
    # the report file gets the details; stderr only the one-line summary
    assert "targetVersion" not in result.stdout and "targetVersion" not in result.stderr
    assert result.stderr.startswith("1 file (1 changed") and result.stderr.count("\n") == 1
    data = json.loads(report.read_text())
    assert data["summary"]["documentsChanged"] == 1
    row = next(r for r in data["findings"] if r["rule"] == "device-plugin-to-claim")
    assert row["kind"] == "Pod" and row["name"] == "gpu" and row["namespace"] == "ml" and row["document"] == 0
    assert row["path"] == "spec.containers[0].resources" and row["severity"] == "info"


def test_json_report_on_stderr(run_cli: Runner) -> None:
    result = run_cli("convert", "--report", "json", "-", stdin=GPU_POD)
    assert json.loads(result.stderr)["summary"]["files"] == 1
    assert _docs(result.stdout)[0]["kind"] == "Pod"


def test_templated_and_values_files_are_skipped_not_errors(run_cli: Runner, corpus: Path) -> None:
    helm = corpus / "templated" / "opea-project__GenAIInfra__helm-charts__common__tgi__templates__deployment.yaml"
    values = corpus / "templated" / "opea-project__GenAIInfra__helm-charts__common__tgi__nv-values.yaml"
    result = run_cli("convert", "--report", "json", str(helm), str(values))
    assert result.code == 0, result.stderr
    rows = json.loads(result.stderr)["findings"]
    assert {r["rule"] for r in rows} == {"skipped"}
    assert result.stdout.count("nvidia.com/gpu") == helm.read_text().count("nvidia.com/gpu") + values.read_text().count(
        "nvidia.com/gpu"
    )


def test_validate_flags_schema_errors(run_cli: Runner) -> None:
    bad = GPU_POD.replace("    image: cuda:12\n", "    image: cuda:12\n    imagePullPolicy: 7\n")
    result = run_cli("convert", "--validate", "--report", "json", "-", stdin=bad)
    assert result.code == 2
    assert any(r["rule"] == "schema-input" for r in json.loads(result.stderr)["findings"])
    assert run_cli("convert", "--validate", "-", stdin=GPU_POD).code == 0


def test_bad_config_is_a_clear_error(run_cli: Runner, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("mappings:\n- resource: a.com/b\n  deviceclass: x\n")
    result = run_cli("convert", "--config", str(config), "-", stdin=GPU_POD)
    assert result.code == 2
    assert str(config) in result.stderr and "deviceclass" in result.stderr
    assert "Traceback" not in result.stderr
    assert run_cli("convert", "--target-version", "1.29", "-", stdin=GPU_POD).code == 2


@pytest.mark.parametrize("command", ["convert", "diff", "plan"])
def test_an_empty_target_version_is_an_error_not_the_default(run_cli: Runner, command: str, tmp_path: Path) -> None:
    """`--target-version "$VERSION"` with the variable unset must not quietly write for the default release."""
    (tmp_path / "version.yaml").write_text("serverVersion: {major: '1', minor: '34', gitVersion: v1.34.2}\n")
    arguments = ["--cluster", str(tmp_path)] if command == "plan" else ["-"]
    result = run_cli(command, "--target-version", "", *arguments, stdin=GPU_POD)
    assert result.code == 2 and not result.stdout
    assert "--target-version: target version '' is not of the form" in result.stderr, result.stderr


def test_target_version_downgrade_to_v1beta1(run_cli: Runner) -> None:
    result = run_cli("convert", "--target-version", "1.32", "-", stdin=GPU_POD)
    template = _docs(result.stdout)[1]
    assert template["apiVersion"] == "resource.k8s.io/v1beta1"
    assert template["spec"]["spec"]["devices"]["requests"][0]["deviceClassName"] == "gpu.nvidia.com"


def test_kind_list_is_converted(run_cli: Runner) -> None:
    pod = yaml.safe_load(GPU_POD)
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod]})
    docs = _docs(run_cli("convert", "-", stdin=listing).stdout)
    assert docs[0]["kind"] == "List"
    assert "resourceClaims" in docs[0]["items"][0]["spec"]
    assert docs[1]["kind"] == "ResourceClaimTemplate"


def test_device_class_with_extended_resource_name_in_inputs_is_reported(run_cli: Runner, corpus: Path) -> None:
    source = corpus / "legacy" / "NVIDIA__k8s-dra-driver-gpu__demo__specs__extended-resources__mig-1g-12gb.yaml"
    result = run_cli("convert", "--report", "json", str(source))
    rows = json.loads(result.stderr)["findings"]
    served = [r for r in rows if r["rule"] == "migration-path"]
    assert len(served) == 1 and "mig-1g-12gb.gpu.nvidia.com" in served[0]["message"]
    assert "off by default in Kubernetes 1.34" in served[0]["message"]
    assert served[0]["path"] == 'spec.containers[0].resources.limits["nvidia.com/mig-1g.12gb"]'
    on_137 = json.loads(run_cli("convert", "--report", "json", "--target-version", "1.37", str(source)).stderr)
    kept = [r for r in on_137["findings"] if r["rule"] == "migration-path"]
    assert len(kept) == 1 and "nvidia.com/mig-1g.12gb -> extended-resource" in kept[0]["message"]
    assert on_137["summary"]["documentsChanged"] == 0


def test_directory_walk_is_sorted_and_skips_dot_directories(run_cli: Runner, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.yaml").write_text(GPU_POD)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "pod.yaml").write_text(GPU_POD.replace("name: gpu", "name: second"))
    (tmp_path / "a.yaml").write_text(GPU_POD.replace("name: gpu", "name: first"))
    docs = _docs(run_cli("convert", str(tmp_path)).stdout)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Pod"] == ["first", "second"]


def test_extended_resource_class_check_covers_kserve_model_containers(run_cli: Runner) -> None:
    stream = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.nvidia.com"'}}]
  extendedResourceName: nvidia.com/gpu
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: bloom}
spec:
  predictor:
    pytorch:
      storageUri: pvc://models
      resources:
        limits:
          nvidia.com/gpu: 1
"""
    rows = json.loads(run_cli("convert", "--report", "json", "-", stdin=stream).stderr)["findings"]
    served = [r for r in rows if r["rule"] == "migration-path" and "gpu.nvidia.com" in r["message"]]
    assert [r["path"] for r in served] == ['spec.predictor.pytorch.resources.limits["nvidia.com/gpu"]']


# --- targets past the release table ---------------------------------------------------------------------


def test_target_138_with_validate_converts_and_says_what_it_assumed_once(run_cli: Runner, tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(GPU_POD)
    result = run_cli(
        "convert", "--target-version", "1.38", "--validate", "--report", "json", "--output-dir", str(tmp_path / "out"),
        str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"),
    )  # fmt: skip
    assert result.code == 0, result.stderr
    report = json.loads(result.stderr)
    run_rows = [r for r in report["findings"] if r["file"] is None]
    assert [r["rule"] for r in run_rows] == ["target-not-released", "schema-fallback"]  # once per run, not per file
    assert "resource.k8s.io/v1beta1" in run_rows[0]["message"] and "1.37" in run_rows[1]["message"]
    assert not [r for r in report["findings"] if r["severity"] == "error"]
    template = _docs((tmp_path / "out" / "a.yaml").read_text())[1]
    assert template["apiVersion"] == "resource.k8s.io/v1"


def test_target_138_text_report_names_the_run(run_cli: Runner) -> None:
    result = run_cli("convert", "--target-version", "1.38", "--validate", "--report", "text", "-", stdin=GPU_POD)
    assert result.code == 0, result.stderr
    assert "(run)" in result.stderr and "target-not-released" in result.stderr
    assert "internal error" not in result.stderr


def test_known_targets_have_no_run_notice(run_cli: Runner) -> None:
    result = run_cli("convert", "--target-version", "1.37", "--validate", "--report", "json", "-", stdin=GPU_POD)
    assert result.code == 0, result.stderr
    assert not [r for r in json.loads(result.stderr)["findings"] if r["file"] is None]


@pytest.mark.parametrize("command", ["convert", "diff"])
def test_a_directory_without_manifests_says_so(run_cli: Runner, tmp_path: Path, command: str) -> None:
    """A mistyped or empty directory is not a silent success with nothing converted."""
    (tmp_path / "README.txt").write_text("no manifests here\n")
    result = run_cli(command, "--report", "json", str(tmp_path))
    assert result.code == 0
    (row,) = [r for r in json.loads(result.stderr)["findings"] if r["rule"] == "no-manifests"]
    assert row["severity"] == "warning" and str(tmp_path) in row["message"]


def test_an_unsupported_target_version_names_the_flag(run_cli: Runner, tmp_path: Path) -> None:
    result = run_cli("convert", "--target-version", "1.31", str(tmp_path))
    assert result.code == 2
    assert "--target-version: target version 1.31 is not supported" in result.stderr


def test_the_summary_counts_each_file_once_as_it_ends(run_cli: Runner, tmp_path: Path) -> None:
    """A kustomization the run edits is one changed file (not also a skipped input), and a file with an
    error that is not written is no changed file."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "pod.yaml").write_text(GPU_POD)
    (tmp_path / "app" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    result = run_cli("diff", "--report", "json", "--no-verify-render", str(tmp_path / "app"))
    summary = json.loads(result.stderr)["summary"]
    assert (summary["files"], summary["filesChanged"], summary["filesSkipped"]) == (3, 3, 0)  # + the templates file
    (tmp_path / "bad.yaml").write_text(
        GPU_POD + "---\n" + GPU_POD.replace("gpu: 2", "gpu: 33").replace("name: gpu", "name: big")
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path / "bad.yaml"))
    summary = json.loads(result.stderr)["summary"]
    assert (summary["files"], summary["filesChanged"], summary["filesWithErrors"]) == (1, 0, 1)


def test_o_yaml_prints_a_json_input_as_yaml(run_cli: Runner, tmp_path: Path) -> None:
    source = tmp_path / "pod.json"
    source.write_text(json.dumps(yaml.safe_load(GPU_POD)))
    result = run_cli("convert", "-o", "yaml", str(source))
    assert result.code == 0, result.stderr
    assert not result.stdout.lstrip().startswith("{")
    objects = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert [o["kind"] for o in objects] == ["List"]
    assert [o["kind"] for o in objects[0]["items"]] == ["Pod", "ResourceClaimTemplate"]
    assert run_cli("convert", str(source)).stdout.lstrip().startswith("{")  # without -o: JSON stays JSON
