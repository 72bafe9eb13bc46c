"""Overlays whose JSON 6902 patches change device requests: rewritten to their DRA form, so that the
real kustomize renders the converted tree with the same devices per container as the original;
what has no exact DRA form (a count substituted by `replacements`, a label-selected target) is an
error naming the file and the patch, and nothing that renders from it is written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from translator_cli_support import Runner
from trees import snapshot, write_tree

from dra_migrate.engine import default_config
from dra_migrate.translator.renders.devices import device_view

pytestmark = pytest.mark.usefixtures("kustomize")  # the real kustomize renders (conftest.py)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: a
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 2
            memory: 8Gi
      - name: sidecar
        image: busybox
"""

BASE = {"base/kustomization.yaml": "resources:\n- deployment.yaml\n", "base/deployment.yaml": DEPLOYMENT}

COUNT_TO_8 = """\
- op: replace  # the big pool
  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu
  value: 8
- op: add
  path: /metadata/labels
  value: {size: big}
"""


def _inline(operations: str, key: str = "patches") -> str:
    body = "".join(f"    {line}\n" for line in operations.splitlines())
    return f"resources:\n- ../../base\n{key}:\n- target: {{kind: Deployment, name: trainer}}\n  patch: |-\n{body}"


OVERLAYS: dict[str, dict[str, str]] = {
    "inline": {"overlays/o/kustomization.yaml": _inline(COUNT_TO_8)},
    "inline-patchesJson6902": {
        "overlays/o/kustomization.yaml": _inline(COUNT_TO_8, "patchesJson6902").replace(
            "{kind: Deployment, name: trainer}", "{group: apps, version: v1, kind: Deployment, name: trainer}"
        )
    },
    "file": {
        "overlays/o/kustomization.yaml": (
            "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n"
            "  target:\n    kind: Deployment\n    name: train.*\n"
        ),
        "overlays/o/gpus.yaml": "# eight GPUs\n" + COUNT_TO_8,
    },
    "json-file": {
        "overlays/o/kustomization.yaml": (
            "resources:\n- ../../base\npatchesJson6902:\n- path: gpus.json\n"
            "  target: {group: apps, version: v1, kind: Deployment, name: trainer}\n"
        ),
        "overlays/o/gpus.json": json.dumps(yaml.safe_load(COUNT_TO_8), indent=2) + "\n",
    },
    "add-gpus-to-the-sidecar": {
        "overlays/o/kustomization.yaml": _inline(
            "- op: add\n  path: /spec/template/spec/containers/1/resources\n  value: {limits: {nvidia.com/gpu: 1}}\n"
        )
    },
    "remove-the-gpus": {
        "overlays/o/kustomization.yaml": _inline(
            "- op: remove\n  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n"
        )
    },
    "replace-the-limits": {
        "overlays/o/kustomization.yaml": _inline(
            "- op: replace\n  path: /spec/template/spec/containers/0/resources/limits\n"
            "  value: {nvidia.com/gpu: 4, memory: 16Gi}\n"
        )
    },
    "inline-strategic-merge": {
        "overlays/o/kustomization.yaml": (
            "resources:\n- ../../base\npatches:\n- patch: |-\n"
            "    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: trainer}\n"
            "    spec:\n      template:\n        spec:\n          containers:\n          - name: sidecar\n"
            "            resources:\n              limits:\n                nvidia.com/gpu: 1  # one for the sidecar\n"
        )
    },
    "component": {
        "overlays/o/kustomization.yaml": "resources:\n- ../../base\ncomponents:\n- ../../components/big\n",
        "components/big/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
            + _inline(COUNT_TO_8).removeprefix("resources:\n- ../../base\n")
        ),
    },
    # kustomize (json-patch v4) sets a key a `replace` names that the mapping lacks, like an `add`
    "replace-of-a-missing-key": {
        "overlays/o/kustomization.yaml": _inline(
            "- op: replace\n  path: /spec/template/spec/containers/0/imagePullPolicy\n  value: Always\n" + COUNT_TO_8
        )
    },
    # targets are matched against what the bases render: the namespace a base sets, a List's items
    "target-in-the-bases-namespace": {
        "base/kustomization.yaml": "namespace: ml\nresources:\n- deployment.yaml\n",
        "overlays/o/kustomization.yaml": _inline(COUNT_TO_8).replace("name: trainer}", "name: trainer, namespace: ml}"),
    },
    "base-is-a-list": {
        "base/deployment.yaml": "apiVersion: v1\nkind: List\nitems:\n- "
        + DEPLOYMENT.replace("\n", "\n  ").rstrip()
        + "\n",
        "overlays/o/kustomization.yaml": _inline(COUNT_TO_8),
    },
}


def _devices(kubectl: Path, root: Path) -> dict[str, dict[str, str]]:
    rendered = subprocess.run([str(kubectl), "kustomize", str(root)], capture_output=True, text=True, check=True)
    objects = [d for d in yaml.safe_load_all(rendered.stdout) if isinstance(d, dict)]
    return {key[4]: devices for key, devices in device_view(objects, default_config()).items()}


def _rows(stderr: str, rule: str) -> list[dict[str, Any]]:
    return [r for r in json.loads(stderr)["findings"] if r["rule"] == rule]


def _plugin_to_claim(devices: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c: {k: v.replace("via device plugin", "via claim") for k, v in d.items()} for c, d in devices.items()}


@pytest.mark.parametrize("case", sorted(OVERLAYS))
def test_a_json_patch_of_device_requests_renders_the_same_devices_after_conversion(
    run_cli: Runner, tmp_path: Path, kustomize: Path, case: str
) -> None:
    write_tree(tmp_path, {**BASE, **OVERLAYS[case]})
    overlay = tmp_path / "overlays" / "o"
    before = _devices(kustomize, overlay)
    assert _devices(kustomize, tmp_path / "base")["a"] == {"gpu.nvidia.com": "2 via device plugin"}
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert _rows(result.stderr, "json-patch-converted")
    verified = {Path(r["file"]).parent.name for r in _rows(result.stderr, "render-verified")}
    assert {"base", "o"} <= verified
    after = _devices(kustomize, overlay)
    assert after == _plugin_to_claim(before)
    assert "via device plugin" not in json.dumps(after)
    converted = snapshot(tmp_path)
    again = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert again.code == 0 and snapshot(tmp_path) == converted, "a second run changed the converted tree"


def test_a_patch_file_keeps_its_comments_and_its_other_operations(run_cli: Runner, tmp_path: Path) -> None:
    write_tree(tmp_path, {**BASE, **OVERLAYS["file"]})
    assert run_cli("convert", "--in-place", str(tmp_path)).code == 0
    text = (tmp_path / "overlays" / "o" / "gpus.yaml").read_text()
    assert text.startswith("# eight GPUs\n")
    operations = yaml.safe_load(text)
    assert {"op": "add", "path": "/metadata/labels", "value": {"size": "big"}} in operations
    assert [o["path"] for o in operations if o["op"] == "replace"] == [
        "/spec/template/spec/resourceClaims/0/resourceClaimTemplateName"
    ]
    templates = yaml.safe_load((tmp_path / "overlays" / "o" / "dra-migrate-templates.yaml").read_text())
    assert templates["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    assert "dra-migrate-templates.yaml" in (tmp_path / "overlays" / "o" / "kustomization.yaml").read_text()


def test_a_json_patch_file_stays_json(run_cli: Runner, tmp_path: Path) -> None:
    write_tree(tmp_path, {**BASE, **OVERLAYS["json-file"]})
    assert run_cli("convert", "--in-place", str(tmp_path)).code == 0
    operations = json.loads((tmp_path / "overlays" / "o" / "gpus.json").read_text())
    assert "nvidia.com~1gpu" not in json.dumps(operations)


REFUSED = {
    "replacements": {
        "overlays/o/kustomization.yaml": (
            "resources:\n- ../../base\n- size.yaml\nreplacements:\n"
            "- source: {kind: ConfigMap, name: size, fieldPath: data.gpus}\n"
            "  targets:\n  - select: {kind: Deployment}\n"
            "    fieldPaths:\n    - spec.template.spec.containers.[name=a].resources.limits.nvidia.com/gpu\n"
        ),
        "overlays/o/size.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: size}\ndata: {gpus: '8'}\n",
    },
    "label-selector": {
        "overlays/o/kustomization.yaml": _inline(COUNT_TO_8).replace(
            "{kind: Deployment, name: trainer}", "{labelSelector: app=trainer}"
        )
    },
    # a guard on the count: rewriting the patch would drop it, so it would apply whatever the base holds
    "test-of-the-count": {
        "overlays/o/kustomization.yaml": _inline(
            "- op: test\n  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n  value: 2\n"
            + COUNT_TO_8
        )
    },
}


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("verify", [True, False])
def test_what_has_no_exact_dra_form_is_refused_and_nothing_it_renders_from_is_written(
    run_cli: Runner, tmp_path: Path, case: str, verify: bool
) -> None:
    write_tree(tmp_path, {**BASE, **REFUSED[case]})
    before = snapshot(tmp_path)
    flags = [] if verify else ["--no-verify-render"]
    result = run_cli("convert", "--in-place", "--report", "json", *flags, str(tmp_path))
    assert result.code == 2, result.stderr
    (row,) = _rows(result.stderr, "patch-not-converted")
    assert row["severity"] == "error" and row["file"].endswith("overlays/o/kustomization.yaml")
    assert ("replacements[0]" if case == "replacements" else "patches[0]") in row["message"]
    assert snapshot(tmp_path) == before, "a file that the refused overlay renders from was written"
    assert run_cli("diff", *flags, str(tmp_path)).code == 2
