"""Which Helm charts get the helm-chart warning: a chart whose templates or values request a mapped
device, named for every values file; a toleration key or a comment naming `nvidia.com/gpu` is no request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from translator_cli_support import Runner
from trees import write_tree

CHART = "apiVersion: v2\nname: app\nversion: 0.1.0\n"
TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    spec:
      # GPU nodes carry the nvidia.com/gpu taint
      {{- /* nvidia.com/gpu requests come from values */}}
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
      containers:
      - name: main
        image: cuda
        resources: {{ toYaml .Values.resources | nindent 10 }}
"""


def _chart_warnings(run_cli: Runner, root: Path) -> list[dict[str, Any]]:
    result = run_cli("convert", "--report", "json", "-o", "yaml", str(root))
    assert result.code == 0, result.stderr
    return [r for r in json.loads(result.stderr)["findings"] if r["rule"] == "helm-chart"]


def test_toleration_keys_and_comments_are_no_device_request(run_cli: Runner, tmp_path: Path) -> None:
    values = "resources: {limits: {cpu: 1}}\ntolerations:\n- {key: nvidia.com/gpu, operator: Exists}\n"
    values += "# resources: {limits: {nvidia.com/gpu: 1}}\n"
    write_tree(tmp_path, {"chart/Chart.yaml": CHART, "chart/values.yaml": values, "chart/templates/d.yaml": TEMPLATE})
    assert _chart_warnings(run_cli, tmp_path) == []


def test_the_warning_names_the_devices_of_every_values_file(run_cli: Runner, tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "chart/Chart.yaml": CHART,
            "chart/values.yaml": "resources: {limits: {nvidia.com/gpu: 1}}\n",
            "chart/values-mig.yaml": "resources: {limits: {nvidia.com/mig-1g.5gb: 1}}\n",
            "chart/templates/d.yaml": TEMPLATE,
        },
    )
    [warning] = _chart_warnings(run_cli, tmp_path)
    message = warning["message"]
    assert "nvidia.com/gpu (values.yaml)" in message, message
    assert "nvidia.com/mig-1g.5gb (values-mig.yaml)" in message, message
    assert "--post-renderer" in message
