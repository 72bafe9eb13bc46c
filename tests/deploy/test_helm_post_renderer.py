"""`helm template --post-renderer dra-migrate` with the real helm and the plugin in deploy/: a real GPU
chart comes out converted, an error fails helm, and a chart given to convert/diff points at it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
