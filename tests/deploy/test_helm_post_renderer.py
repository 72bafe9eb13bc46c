"""`helm template --post-renderer dra-migrate` with the real helm and the plugin in deploy/: a real GPU
chart comes out converted, an error fails helm, and a chart given to convert/diff points at it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import Helm
from helm_charts import helm_environment, install_plugin, vllm_chart

from dra_migrate.cli import main


def _post_render(helm: Helm, tmp_path: Path, chart: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = helm_environment(tmp_path / "helm")
    install_plugin(helm.binary, environment)
    return subprocess.run(
        [helm.binary, "template", "demo", str(chart), "--namespace", "ml", "--post-renderer", "dra-migrate", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_gpu_chart_renders_converted(helm: Helm, tmp_path: Path) -> None:
    chart = vllm_chart(tmp_path)
    done = _post_render(helm, tmp_path, chart, "-f", str(tmp_path / "gpu-values.yaml"))
    assert done.returncode == 0, done.stderr
    objects = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert "nvidia.com/gpu: " not in done.stdout
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (template,) = [o for o in objects if o["kind"] == "ResourceClaimTemplate"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "vllm-gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert template["metadata"]["namespace"] == "ml"  # the release namespace, as the workload's
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


def test_an_error_fails_helm_and_the_report_file_says_why(helm: Helm, tmp_path: Path) -> None:
    chart = tmp_path / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\n", encoding="utf-8")
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: tiny}\nspec:\n  containers:\n  - name: main\n    image: cuda\n"
    pod += "    resources: {limits: {nvidia.com/gpu: {{ .Values.gpus }}}}\n"
    (chart / "templates" / "pod.yaml").write_text(pod, encoding="utf-8")
    report = tmp_path / "report.txt"
    done = _post_render(helm, tmp_path, chart, "--set", "gpus=0.5", f"--post-renderer-args=--report-file={report}")
    assert done.returncode != 0 and "dra-migrate" in done.stderr
    assert "invalid-device-count" in report.read_text(encoding="utf-8")


def test_a_chart_given_to_diff_is_a_warning_naming_the_post_renderer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chart = vllm_chart(tmp_path)
    code = main(["diff", "--report", "json", str(chart)])
    assert code == 1  # the chart needs the migration, through the post-renderer
    err = capsys.readouterr().err
    rows = [r for r in json.loads(err)["findings"] if r["rule"] == "helm-chart"]
    assert len(rows) == 1 and rows[0]["severity"] == "warning" and "--post-renderer" in rows[0]["message"]



HOOK_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-warmup
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: cuda
        resources: {limits: {nvidia.com/gpu: {{ .Values.gpus }}}}
"""
SERVING = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-serve
spec:
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: main
        image: cuda
        resources: {limits: {nvidia.com/gpu: {{ .Values.gpus }}}}
"""


def _sections(output: str) -> dict[str, dict[str, Any]]:
    """The objects of `helm install --dry-run` by Helm's own split of hooks from the release's
    manifests, keyed `section/kind`."""
    hooks, _, manifests = output.partition("\nMANIFEST:\n")
    found: dict[str, dict[str, Any]] = {}
    for section, text in (("hooks", hooks.partition("\nHOOKS:\n")[2]), ("manifests", manifests)):
        for document in yaml.safe_load_all(text):
            if isinstance(document, dict):
                key = f"{section}/{document['kind']}"
                assert key not in found, key
                found[key] = document
    return found


def _template_names(workload: dict[str, Any]) -> set[str]:
    return {c["resourceClaimTemplateName"] for c in workload["spec"]["template"]["spec"]["resourceClaims"]}


def test_a_hook_jobs_template_is_a_hook_created_before_it(helm: Helm, tmp_path: Path) -> None:
    """Helm 4 post-renders hooks: the template a pre-install Job needs must be a pre-install hook of a
    lower weight (Helm runs a phase's hooks by weight), or the Job's pods are created before it; the
    Deployment needing the same devices keeps a template of the release's own."""
    chart = tmp_path / "hooked"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hooked\nversion: 0.1.0\n", encoding="utf-8")
    (chart / "values.yaml").write_text("gpus: 2\n", encoding="utf-8")
    (chart / "templates" / "job.yaml").write_text(HOOK_JOB, encoding="utf-8")
    (chart / "templates" / "deploy.yaml").write_text(SERVING, encoding="utf-8")
    environment = helm_environment(tmp_path / "helm")
    install_plugin(helm.binary, environment)
    arguments = ["install", "demo", str(chart), "--dry-run=client", "-n", "ml", "--post-renderer", "dra-migrate"]
    done = subprocess.run([helm.binary, *arguments], env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = _sections(done.stdout)
    hook_template, template = found["hooks/ResourceClaimTemplate"], found["manifests/ResourceClaimTemplate"]
    assert _template_names(found["hooks/Job"]) == {hook_template["metadata"]["name"]}
    annotations = hook_template["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert int(annotations["helm.sh/hook-weight"]) < -5
    assert annotations["helm.sh/hook-delete-policy"] == "hook-succeeded"  # removed with the Job after the phase
    assert _template_names(found["manifests/Deployment"]) == {template["metadata"]["name"]}
    assert "annotations" not in template["metadata"]
