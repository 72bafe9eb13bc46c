"""Converted manifests mean to kubectl what the originals meant: YAML 1.1 words keep their quotes."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubectl import kubectl_read_all, require_kubectl
from translator_cli_support import Runner

FLOW_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: ml}
spec: {containers: [{name: main, image: cuda, resources: {limits: {nvidia.com/gpu: 1}}}],
  tolerations: [{key: gpu, operator: Equal, value: "N", effect: NoSchedule}]}
"""

MERGE_KEY_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer, namespace: ml}
spec:
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
      - &main
        name: main
        image: vllm
        env: [{name: MODE, value: "off"}]
        resources: {limits: {example.com/fpga: 1}}
      - <<: *main
        name: second
"""

CONFIG = """\
mappings:
- resource: example.com/fpga
  deviceClassName: fpga.example.com
  config:
  - driver: fpga.example.com
    parameters: {mode: "N", budget: "1e3", octal: "017", flag: "yes"}
"""


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return require_kubectl()


def test_toleration_value_n_stays_a_string_when_its_flow_node_is_rewritten(run_cli: Runner, kubectl: Path) -> None:
    result = run_cli("convert", "-", stdin=FLOW_POD)
    assert result.code == 0, result.stderr
    pod = kubectl_read_all(kubectl, result.stdout)[0]
    assert pod["spec"]["tolerations"][0]["value"] == "N"
    assert pod["spec"]["resourceClaims"]


def test_opaque_parameters_keep_their_strings_through_a_merge_key_rewrite(
    run_cli: Runner, kubectl: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    result = run_cli("convert", "--config", str(config), "-", stdin=MERGE_KEY_DEPLOYMENT)
    assert result.code == 0, result.stderr
    deployment, template = kubectl_read_all(kubectl, result.stdout)
    assert template["kind"] == "ResourceClaimTemplate"
    parameters = template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert parameters == {"mode": "N", "budget": "1e3", "octal": "017", "flag": "yes"}
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["env"][0]["value"] for c in containers] == ["off", "off"]
    assert all("resources" not in c or "limits" not in c["resources"] for c in containers)
