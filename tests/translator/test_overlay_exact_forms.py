"""Overlays real repositories write, converted exactly: `dra-migrate convert --in-place` exits 0 and the
real kustomize then renders, for every root, what the engine makes of the root's render before. Each
case was refused before (a dev overlay's 0, null or deleted count, init-container and sidecar counts,
patches by `target`, stacked patches, the base's tolerations, inline `patchesStrategicMerge`, a JSON
6902 `add` kustomize applies where the parent map is missing)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from translator_cli_support import Runner
from trees import snapshot, write_tree

from dra_migrate.engine import default_config
from dra_migrate.translator.conversion.jsonpatches import Rewrite, rewrite
from dra_migrate.translator.renders.renderdiff import conversion_differences

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
      tolerations:
      - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
      - {key: amd.com/gpu, operator: Exists, effect: NoSchedule}
      initContainers:
      - name: warm
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 1
      - name: proxy
        image: envoy
        restartPolicy: Always
      containers:
      - name: main
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 2
      - name: side
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 1
"""

BASE = {"base/kustomization.yaml": "resources:\n- deployment.yaml\n", "base/deployment.yaml": DEPLOYMENT}


def _patch(containers: str, field: str = "containers", name: str = "trainer", spec: str = "") -> str:
    """A strategic-merge patch of the Deployment's pod spec: `containers` is the list, indented 6."""
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n{spec}"
        f"      {field}:\n{containers}"
    )


def _count(container: str, value: str) -> str:
    return f"      - name: {container}\n        resources:\n          limits:\n            nvidia.com/gpu: {value}\n"


def _overlay(patches: str, resources: str = "- ../base") -> str:
    return f"resources:\n{resources}\n{patches}"


ROOTS_TO_CHECK = ("base", "dev")


def _renders(kustomize: Path, root: Path) -> list[Any]:
    done = subprocess.run([str(kustomize), "kustomize", str(root)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if isinstance(d, dict)]


def _converts_exactly(
    run_cli: Runner, kustomize: Path, tmp_path: Path, files: Mapping[str, str], roots: tuple[str, ...] = ROOTS_TO_CHECK
) -> dict[str, Any]:
    """Lay out the tree, convert it in place (exit 0, every root verified), and check with the real
    kustomize that each root renders the conversion of what it rendered before."""
    write_tree(tmp_path, files)
    before = {root: _renders(kustomize, tmp_path / root) for root in roots}
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stderr)
    verified = {
        Path(r["file"]).parent.relative_to(tmp_path).as_posix()
        for r in report["findings"]
        if r["rule"] == "render-verified"
    }
    assert set(roots) <= verified, result.stderr
    for root in roots:
        after = _renders(kustomize, tmp_path / root)
        assert conversion_differences(before[root], after, default_config()) == [], root
        assert "nvidia.com/gpu: " not in yaml.safe_dump(after).replace("nvidia.com/gpu: 0", ""), root
    converted = snapshot(tmp_path)  # the pre-commit hooks' view: converted once, nothing left to do
    diff = run_cli("diff", str(tmp_path))
    assert diff.code == 0 and diff.stdout == "", diff.stdout + diff.stderr
    assert snapshot(tmp_path) == converted
    return report


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param(_patch(_count("main", "0")), id="zero"),
        pytest.param(_patch(_count("main", "null")), id="null"),
        pytest.param(_patch(_count("main", "0") + _count("side", "0")), id="zero-everywhere"),
        pytest.param(
            _patch("      - name: main\n        resources:\n          limits:\n            $patch: delete\n"),
            id="patch-delete-limits",
        ),
        pytest.param(_patch("      - name: side\n        $patch: delete\n"), id="patch-delete-container"),
    ],
)
def test_a_dev_overlay_without_gpus(run_cli: Runner, kustomize: Path, tmp_path: Path, patch: str) -> None:
    files = {**BASE, "dev/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n"), "dev/p.yaml": patch}
    _converts_exactly(run_cli, kustomize, tmp_path, files)


def test_a_json_patch_removing_the_gpus(run_cli: Runner, kustomize: Path, tmp_path: Path) -> None:
    remove = "- op: remove\n  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n"
    files = {
        **BASE,
        "dev/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n  target: {kind: Deployment, name: trainer}\n"),
        "dev/p.yaml": remove,
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files)


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param(_patch(_count("warm", "4"), field="initContainers"), id="init-raised-above-the-containers"),
        pytest.param(_patch(_count("warm", "0"), field="initContainers"), id="init-without"),
        pytest.param(_patch(_count("proxy", "1"), field="initContainers"), id="sidecar-given-a-gpu"),
        pytest.param(
            _patch("      - name: fetch\n        image: cuda\n" + _count("x", "3").split("\n", 1)[1], "initContainers"),
            id="new-gpu-init-container",
        ),
    ],
)
def test_init_container_and_sidecar_counts(run_cli: Runner, kustomize: Path, tmp_path: Path, patch: str) -> None:
    """Device-plugin semantics: a pod needs max(init, sum of the running containers); an init container
    shares the claims of containers not running yet through `resources.claims[].request`."""
    files = {**BASE, "dev/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n"), "dev/p.yaml": patch}
    _converts_exactly(run_cli, kustomize, tmp_path, files)


def test_a_patch_applied_by_target_with_another_name(run_cli: Runner, kustomize: Path, tmp_path: Path) -> None:
    files = {
        **BASE,
        "dev/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n  target: {kind: Deployment, name: trainer}\n"),
        "dev/p.yaml": _patch(_count("main", "4"), name="not-used-when-a-target-is-given"),
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files)


def test_stacked_patches_two_levels_and_two_on_one_object(run_cli: Runner, kustomize: Path, tmp_path: Path) -> None:
    files = {
        **BASE,
        "mid/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n"),
        "mid/p.yaml": _patch(_count("main", "4")),
        "dev/kustomization.yaml": _overlay("patches:\n- path: one.yaml\n- path: two.yaml\n", "- ../mid"),
        "dev/one.yaml": _patch(_count("side", "3")),
        "dev/two.yaml": _patch(_count("main", "1")),
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files, ("base", "mid", "dev"))


def test_tolerations_render_as_kustomize_merges_them(run_cli: Runner, kustomize: Path, tmp_path: Path) -> None:
    """A count patch must not replace the base's tolerations (the user's and another vendor's survive);
    an overlay that sets its own list gets the GPU toleration in it."""
    own = "      - {key: spot, operator: Exists}\n"
    base = DEPLOYMENT.replace("nvidia.com/gpu: 1\n", "cpu: 1\n").replace("nvidia.com/gpu: 2\n", "cpu: 2\n")
    files = {
        "base/kustomization.yaml": "resources:\n- deployment.yaml\n",
        "base/deployment.yaml": base,
        "dev/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n"),
        "dev/p.yaml": _patch(_count("main", "2")),
        "spot/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n", "- ../dev"),
        "spot/p.yaml": _patch(own, field="tolerations"),
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files, ("base", "dev", "spot"))
    rendered = _renders(kustomize, tmp_path / "dev")[0]["spec"]["template"]["spec"]["tolerations"]
    assert {t["key"] for t in rendered} == {"dedicated", "amd.com/gpu", "nvidia.com/gpu"}
    rendered = _renders(kustomize, tmp_path / "spot")[0]["spec"]["template"]["spec"]["tolerations"]
    assert {t["key"] for t in rendered} == {"spot", "nvidia.com/gpu"}


def test_inline_patches_strategic_merge_strings(run_cli: Runner, kustomize: Path, tmp_path: Path) -> None:
    inline = _patch(_count("main", "4")).replace("\n", "\n    ")
    files = {**BASE, "dev/kustomization.yaml": _overlay(f"patchesStrategicMerge:\n- |-\n    {inline.rstrip()}\n")}
    _converts_exactly(run_cli, kustomize, tmp_path, files)


def test_a_json_patch_touching_no_device_is_applied_as_kustomize_applies_it(
    run_cli: Runner, kustomize: Path, tmp_path: Path
) -> None:
    """An `add` of an Ingress annotation whose parent map is missing: kustomize applies it (its own
    annotations are there while patches run); it is kept as written and refuses nothing."""
    ingress = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec: {}\n"
    annotate = '[{"op": "add", "path": "/metadata/annotations/team", "value": "ml"}]'
    files = {
        **BASE,
        "base/kustomization.yaml": "resources:\n- deployment.yaml\n- ingress.yaml\n",
        "base/ingress.yaml": ingress,
        "dev/kustomization.yaml": _overlay(
            f"patches:\n- path: p.yaml\n- target: {{kind: Ingress, name: web}}\n  patch: '{annotate}'\n"
        ),
        "dev/p.yaml": _patch(_count("main", "4")),
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files)
    assert annotate in (tmp_path / "dev" / "kustomization.yaml").read_text()


def test_a_components_strategic_merge_patch(run_cli: Runner, kustomize: Path, tmp_path: Path) -> None:
    """A component's patch applies to what the kustomization including it renders."""
    files = {
        **BASE,
        "components/big/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: p.yaml\n"
        ),
        "components/big/p.yaml": _patch(_count("side", "4")),
        "dev/kustomization.yaml": _overlay("components:\n- ../components/big\n"),
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files)


def test_a_json_patch_on_no_device_is_kept_even_where_it_does_not_apply_here() -> None:
    """What kustomize makes of an operation on no device is its business (render verification builds
    it): the plan keeps it as written instead of refusing the tree."""
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"}, "spec": {}}
    operations = [{"op": "add", "path": "/spec/rules/0/host", "value": "example.org"}]
    assert rewrite(operations, [ingress], default_config()) == Rewrite(None, [])


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: pytorch
                  resources: {limits: {nvidia.com/gpu: 4}}
"""


def test_a_patch_whose_conversion_changes_a_field_outside_the_pod_spec(
    run_cli: Runner, kustomize: Path, tmp_path: Path
) -> None:
    """Trainer derived the processes per node from the node container's GPUs: the engine writes the
    count into mlPolicy, and the converted patch writes the dev overlay's count there too."""
    smaller = RUNTIME.replace("  mlPolicy: {numNodes: 2, torch: {}}\n", "")
    smaller = smaller.replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 1")
    files = {
        "base/kustomization.yaml": "resources:\n- runtime.yaml\n",
        "base/runtime.yaml": RUNTIME,
        "dev/kustomization.yaml": _overlay("patches:\n- path: p.yaml\n"),
        "dev/p.yaml": smaller,
    }
    _converts_exactly(run_cli, kustomize, tmp_path, files)
    assert "numProcPerNode: 1" in (tmp_path / "dev" / "p.yaml").read_text()
