"""One GitOps repository with everything at once: a base whose pod templates share an anchor, and
overlays that patch it by strategic merge (a file and inline), JSON 6902 (a YAML file, a JSON file,
inline), a component, a namespace change. Converted in place, every root the real kustomize builds
renders the same devices per container as before; an overlay that substitutes a device count
through `replacements` makes the run refuse with exit 2 and write nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from test_anchors_and_whole_files import PYTORCH_JOB as BASE_JOB  # Worker reuses the Master's `resources: *r`
from translator_cli_support import Runner
from trees import snapshot, write_tree

from dra_migrate.engine import default_config
from dra_migrate.translator.renders.devices import device_view

pytestmark = pytest.mark.usefixtures("kustomize")  # the real kustomize renders (conftest.py)

BASE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
spec:
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
      - name: model
        image: vllm
        resources:
          limits: {nvidia.com/gpu: 2, memory: 32Gi}
      - name: sidecar
        image: busybox
"""

JOB_OPS = "- op: replace\n  path: /spec/pytorchReplicaSpecs/Worker/replicas\n  value: 8\n"
SERVE_OPS = [
    {"op": "replace", "path": "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu", "value": 4},
]


def _inline(target: str, operations: str) -> str:
    body = "".join(f"    {line}\n" for line in operations.splitlines())
    return f"- target: {target}\n  patch: |-\n{body}"


REPOSITORY = {
    "base/kustomization.yaml": "resources:\n- job.yaml\n- deployment.yaml\n",
    "base/job.yaml": BASE_JOB,
    "base/deployment.yaml": BASE_DEPLOYMENT,
    # strategic merge, in a file: the model gets 1 GPU
    "overlays/small/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: serve.yaml\n",
    "overlays/small/serve.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: serve}\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: model\n        resources:\n          limits: {nvidia.com/gpu: 1}\n"
    ),
    # JSON 6902 in a YAML file on the Worker count (no device), and in a JSON file on the model's GPUs
    "overlays/big/kustomization.yaml": (
        "namespace: big\nresources:\n- ../../base\npatches:\n- path: job.yaml\n  target: {kind: PyTorchJob}\n"
        "patchesJson6902:\n- path: serve.json\n  target: {group: apps, version: v1, kind: Deployment, name: serve}\n"
    ),
    "overlays/big/job.yaml": JOB_OPS,
    "overlays/big/serve.json": json.dumps(SERVE_OPS, indent=2) + "\n",
    # inline JSON 6902 giving the sidecar a GPU, and an inline strategic merge on the Worker's GPUs
    "overlays/inline/kustomization.yaml": (
        "resources:\n- ../../base\npatches:\n"
        + _inline(
            "{kind: Deployment, name: serve}",
            "- op: add\n  path: /spec/template/spec/containers/1/resources\n  value: {limits: {nvidia.com/gpu: 1}}",
        )
        + "- patch: |-\n    apiVersion: kubeflow.org/v1\n    kind: PyTorchJob\n    metadata: {name: train}\n"
        "    spec:\n      pytorchReplicaSpecs:\n        Worker:\n          template:\n            spec:\n"
        "              containers:\n              - name: pytorch\n                resources:\n"
        "                  limits: {nvidia.com/gpu: 8}\n"
    ),
    # a component that removes the model's GPUs
    "overlays/cpu/kustomization.yaml": "resources:\n- ../../base\ncomponents:\n- ../../components/no-gpu\n",
    "components/no-gpu/kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
        + _inline(
            "{kind: Deployment, name: serve}",
            "- op: remove\n  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
        )
    ),
}

ROOTS = ("base", "overlays/small", "overlays/big", "overlays/inline", "overlays/cpu")


def _render(kubectl: Path, root: Path) -> dict[tuple[str, ...], dict[str, str]]:
    rendered = subprocess.run([str(kubectl), "kustomize", str(root)], capture_output=True, text=True, check=True)
    objects = [d for d in yaml.safe_load_all(rendered.stdout) if isinstance(d, dict)]
    return {tuple(map(str, key)): devices for key, devices in device_view(objects, default_config()).items()}


def test_every_root_of_the_repository_renders_the_same_devices_after_conversion(
    run_cli: Runner, tmp_path: Path, kustomize: Path
) -> None:
    write_tree(tmp_path, REPOSITORY)
    before = {root: _render(kustomize, tmp_path / root) for root in ROOTS}
    assert any("via device plugin" in json.dumps(list(v.values())) for v in before.values())
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    findings = json.loads(result.stderr)["findings"]
    verified = {str(Path(r["file"]).parent.relative_to(tmp_path)) for r in findings if r["rule"] == "render-verified"}
    assert verified == set(ROOTS)
    for root in ROOTS:
        after = _render(kustomize, tmp_path / root)
        expected = {
            key: {k: v.replace("via device plugin", "via claim") for k, v in devices.items()}
            for key, devices in before[root].items()
        }
        assert after == expected, root
    converted = snapshot(tmp_path)
    assert run_cli("convert", "--in-place", str(tmp_path)).code == 0
    assert snapshot(tmp_path) == converted, "a second run changed the converted repository"
    assert run_cli("diff", str(tmp_path)).code == 0


def test_one_overlay_that_cannot_be_converted_stops_the_repository_and_nothing_is_written(
    run_cli: Runner, tmp_path: Path
) -> None:
    write_tree(
        tmp_path,
        {
            **REPOSITORY,
            "overlays/sized/kustomization.yaml": (
                "resources:\n- ../../base\n- size.yaml\nreplacements:\n"
                "- source: {kind: ConfigMap, name: size, fieldPath: data.gpus}\n"
                "  targets:\n  - select: {kind: Deployment, name: serve}\n"
                "    fieldPaths:\n    - spec.template.spec.containers.0.resources.limits.nvidia\\.com/gpu\n"
            ),
            "overlays/sized/size.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: size}\ndata: {gpus: '8'}\n",
        },
    )
    before = snapshot(tmp_path)
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 2
    rules = {r["rule"] for r in json.loads(result.stderr)["findings"] if r["severity"] == "error"}
    assert "patch-not-converted" in rules
    # the base is rendered by the refused overlay: nothing of it is written, nor of the overlays on it
    assert snapshot(tmp_path) == before


def test_a_charts_templates_are_skipped_even_where_they_parse_as_yaml(run_cli: Runner, tmp_path: Path) -> None:
    """A template with `{{ }}` only inside strings parses as YAML; it is still Helm's input, not a manifest:
    left as it is (helm template would render a copy of the template per file) with one helm-chart warning."""
    pod = BASE_DEPLOYMENT.replace("name: serve\n", 'name: "{{ .Release.Name }}-serve"\n', 1)
    write_tree(
        tmp_path,
        {
            "chart/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n",
            "chart/values.yaml": "replicas: 1\n",
            "chart/templates/one.yaml": pod,
            "chart/templates/two.yaml": pod,
            "plain/serve.yaml": BASE_DEPLOYMENT,
        },
    )
    before = snapshot(tmp_path / "chart")
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert snapshot(tmp_path / "chart") == before
    assert "resourceClaims" in (tmp_path / "plain" / "serve.yaml").read_text()
    findings = json.loads(result.stderr)["findings"]
    assert [r["severity"] for r in findings if r["rule"] == "helm-chart"] == ["warning"]
