"""Render verification is exact: what the converted tree renders must be the conversion of what the
tree rendered before, field for field, not only the same device count per container. Each case is an
overlay that keeps every count and still changes what the pod gets; real kustomize renders both."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from translator_cli_support import Runner
from trees import snapshot, write_tree

from dra_migrate.engine import convert, default_config
from dra_migrate.translator.renders.renderdiff import conversion_differences

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
      tolerations:
      - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
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

COUNT_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  template:
    spec:
      containers:
      - name: main
        resources:
          limits:
            nvidia.com/gpu: 4
"""

BASE = {"base/kustomization.yaml": "resources:\n- deployment.yaml\n", "base/deployment.yaml": DEPLOYMENT}


def _findings(stderr: str, rule: str) -> list[dict[str, Any]]:
    return [r for r in json.loads(stderr)["findings"] if r["rule"] == rule]


def _refused(run_cli: Runner, root: Path, *arguments: str) -> list[str]:
    """The run exits 2, writes nothing, and returns its render-mismatch messages."""
    before = snapshot(root)
    result = run_cli("convert", "--in-place", "--report", "json", *(arguments or (str(root),)))
    assert result.code == 2, result.stderr
    assert snapshot(root) == before, "a root whose render is not the conversion was written"
    refusals = _findings(result.stderr, "render-mismatch") + _findings(result.stderr, "render-not-built")
    return [r["message"] for r in refusals]


def test_an_overlay_count_patch_keeps_the_base_tolerations(run_cli: Runner, tmp_path: Path) -> None:
    """kustomize replaces `tolerations` wholesale: the converted count patch carries the GPU toleration
    only where the base's list would not render it, and then with the base's `dedicated` one."""
    write_tree(
        tmp_path,
        {
            **BASE,
            "count/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: p.yaml\n",
            "count/p.yaml": COUNT_PATCH,
        },
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.name for r in _findings(result.stderr, "render-verified")} == {"base", "count"}


def test_an_overlay_that_deletes_a_gpu_container_converts_exactly(run_cli: Runner, tmp_path: Path) -> None:
    """A strategic-merge `$patch: delete` of a container: the converted patch also drops the base's
    claim for it, which would otherwise stay on the pod and still be allocated."""
    delete = COUNT_PATCH.split("      - name: main")[0] + "      - name: side\n        $patch: delete\n"
    write_tree(
        tmp_path,
        {**BASE, "cpu/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: rm.yaml\n", "cpu/rm.yaml": delete},
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.name for r in _findings(result.stderr, "render-verified")} == {"base", "cpu"}
    assert "side-gpu" not in (tmp_path / "cpu" / "rm.yaml").read_text()


def test_a_template_outside_the_namespace_of_its_pods_is_refused(run_cli: Runner, tmp_path: Path) -> None:
    """--templates-file outside the tree writes namespace-less templates; the kustomization puts the pods in prod."""
    write_tree(
        tmp_path,
        {
            "app/kustomization.yaml": "namespace: prod\nresources:\n- deployment.yaml\n",
            "app/deployment.yaml": DEPLOYMENT,
        },
    )
    templates = tmp_path / "templates.yaml"
    messages = _refused(run_cli, tmp_path / "app", "--templates-file", str(templates), str(tmp_path / "app"))
    assert any(m.startswith("ResourceClaimTemplate prod/") and "missing" in m for m in messages), messages


def test_an_unchanged_root_whose_render_needs_converting_is_refused(run_cli: Runner, tmp_path: Path) -> None:
    """The base alone is left to KEP-5004; the overlay pins the pod to a node (`nodeName`), which the
    scheduler's extended-resource path never sees, so its render needs claims no file gets."""
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: pinned}\nspec:\n  containers:\n  - name: c\n    image: cuda\n"
    pod += "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    node = "- op: add\n  path: /spec/nodeName\n  value: gpu-node-7\n"
    write_tree(
        tmp_path,
        {
            "base/kustomization.yaml": "resources:\n- pod.yaml\n",
            "base/pod.yaml": pod,
            "pinned/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: node.yaml\n  target: {kind: Pod}\n",
            "pinned/node.yaml": node,
        },
    )
    messages = _refused(run_cli, tmp_path, "--target-version", "1.37", "--strategy", "extendedResource", str(tmp_path))
    assert any("Pod pinned: spec.resourceClaims" in m for m in messages), messages


def test_a_base_and_its_overlay_given_as_two_arguments_are_verified(run_cli: Runner, tmp_path: Path) -> None:
    """The copy that is built keeps the arguments where they are relative to each other (`../base`)."""
    patch = COUNT_PATCH.replace("nvidia.com/gpu: 4", "cpu: 1")
    write_tree(
        tmp_path,
        {**BASE, "dev/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: p.yaml\n", "dev/p.yaml": patch},
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path / "base"), str(tmp_path / "dev"))
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.name for r in _findings(result.stderr, "render-verified")} == {"base", "dev"}


def test_two_mig_profiles_and_a_milli_count_in_one_container_are_verified(run_cli: Runner, tmp_path: Path) -> None:
    """Two MIG profiles share one DeviceClass and `1000m` is one device: both convert exactly."""
    deployment = DEPLOYMENT.replace(
        "nvidia.com/gpu: 2", "nvidia.com/mig-1g.5gb: 1\n            nvidia.com/mig-2g.10gb: 1"
    )
    deployment = deployment.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 1000m")
    write_tree(tmp_path, {**BASE, "base/deployment.yaml": deployment})
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert len(_findings(result.stderr, "render-verified")) == 1


def test_a_root_that_loads_a_sibling_patch_is_verified_not_skipped(run_cli: Runner, tmp_path: Path) -> None:
    """A patch in ../common needs kustomize's load restrictor off; the render is still checked."""
    zero = COUNT_PATCH.replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 0")
    write_tree(
        tmp_path,
        {
            **BASE,
            "common/zero.yaml": zero,
            "cpu/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: ../common/zero.yaml\n",
        },
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.name for r in _findings(result.stderr, "render-verified")} == {"base", "cpu"}


# -- the comparison itself ------------------------------------------------------------------------


def _pod(**spec: Any) -> dict[str, Any]:
    containers = [{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 2}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": containers, **spec},
    }


def _converted(obj: dict[str, Any]) -> list[dict[str, Any]]:
    result = convert(copy.deepcopy(obj), default_config())
    assert result.object is not None
    return [result.object, *result.templates]


def test_the_conversion_of_a_render_is_what_it_must_render() -> None:
    before = [_pod(tolerations=[{"key": "a", "operator": "Exists"}])]
    assert conversion_differences(before, _converted(before[0]), default_config()) == []


def test_lists_kubernetes_reads_as_sets_may_come_in_any_order() -> None:
    before = [_pod(tolerations=[{"key": "a", "operator": "Exists"}])]
    after = _converted(before[0])
    after[0]["spec"]["tolerations"].reverse()
    assert len(after[0]["spec"]["tolerations"]) == 2
    assert conversion_differences(before, after, default_config()) == []


def test_a_changed_field_a_missing_template_and_an_extra_object_are_each_named() -> None:
    before = [_pod()]
    pod, template = _converted(before[0])
    pod["spec"]["nodeName"] = "n1"
    extra = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    problems = conversion_differences(before, [pod, extra], default_config())
    assert problems == [
        "ConfigMap x: rendered after the conversion only",
        'Pod ml/p: spec.nodeName renders as "n1"; converting the render gives nothing',
        f"ResourceClaimTemplate ml/{template['metadata']['name']}: needed, missing from the render after the "
        "conversion",
    ]


def test_a_template_with_another_spec_is_a_difference_and_extra_templates_are_not() -> None:
    before = [_pod()]
    pod, template = _converted(before[0])
    other = copy.deepcopy(template)
    other["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    leftover = copy.deepcopy(template)
    leftover["metadata"]["name"] = "left-from-the-base"
    assert conversion_differences(before, [pod, template, leftover], default_config()) == []
    (problem,) = conversion_differences(before, [pod, other], default_config())
    assert "spec.spec.devices.requests.0.exactly.count renders as 3; converting the render gives 2" in problem


def test_a_root_rendering_from_a_base_outside_the_inputs_that_needs_nothing_converts(
    run_cli: Runner, tmp_path: Path
) -> None:
    """`../common` holds only a generator: built with the copy, nothing in it needs converting."""
    write_tree(
        tmp_path,
        {
            "common/kustomization.yaml": "configMapGenerator:\n- name: cfg\n  literals: [A=1]\n",
            "app/kustomization.yaml": "resources:\n- ../common\n- deployment.yaml\n",
            "app/deployment.yaml": DEPLOYMENT,
        },
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path / "app"))
    assert result.code == 0, result.stderr
    assert "resourceClaims" in (tmp_path / "app" / "deployment.yaml").read_text()


def test_a_root_reading_a_file_outside_the_inputs_is_refused_saying_so(run_cli: Runner, tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "shared/app.env": "A=1\n",
            "app/kustomization.yaml": "resources:\n- deployment.yaml\nconfigMapGenerator:\n- name: cfg\n"
            "  envs: [../shared/app.env]\n",
            "app/deployment.yaml": DEPLOYMENT,
        },
    )
    (message,) = _refused(run_cli, tmp_path, str(tmp_path / "app"))
    assert message.startswith("it reads files outside the repository") and "shared/app.env" in message
    assert "--repository" in message


def test_diff_shows_no_change_that_convert_would_not_write(run_cli: Runner, tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            **BASE,
            "count/kustomization.yaml": "resources:\n- ../base\nnamePrefix: dev-\npatches:\n- path: p.yaml\n",
            "count/p.yaml": COUNT_PATCH,
        },
    )
    result = run_cli("diff", "--report", "json", str(tmp_path))
    assert result.code == 2
    assert result.stdout == ""  # every file feeds the refused overlay: convert writes none of them
    assert _findings(result.stderr, "render-mismatch") and _findings(result.stderr, "not-written")


@pytest.mark.parametrize(
    "remote", ["https://github.com/example/models//base?ref=v1", "github.com/example/models/base?ref=v1"]
)
def test_an_overlay_patching_a_remote_base_is_refused(run_cli: Runner, tmp_path: Path, remote: str) -> None:
    """The base is not converted with it: the converted patch would give its pods claims beside their
    device-plugin requests, and the render cannot be checked without fetching the base."""
    write_tree(
        tmp_path,
        {"prod/kustomization.yaml": f"resources:\n- {remote}\npatches:\n- path: p.yaml\n", "prod/p.yaml": COUNT_PATCH},
    )
    (message,) = _refused(run_cli, tmp_path)
    assert remote in message and "remote base not converted with it" in message


def test_an_overlay_with_its_own_gpu_workload_beside_a_remote_base_needs_the_flag(
    run_cli: Runner, tmp_path: Path
) -> None:
    """Its render cannot be built here (the remote base is not fetched): refused, nothing written, unless
    the user turns verification off, which the run then says."""
    write_tree(
        tmp_path,
        {
            "prod/kustomization.yaml": "resources:\n- https://github.com/example/models//base?ref=v1\n- gpu.yaml\n",
            "prod/gpu.yaml": DEPLOYMENT,
        },
    )
    (message,) = _refused(run_cli, tmp_path)
    assert "a remote base verification does not fetch" in message and "--no-verify-render" in message
    result = run_cli("convert", "--in-place", "--report", "json", "--no-verify-render", str(tmp_path))
    assert result.code == 0, result.stderr
    assert _findings(result.stderr, "render-not-verified")
    assert "resourceClaims" in (tmp_path / "prod" / "gpu.yaml").read_text()
