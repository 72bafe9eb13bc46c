"""Render verification with the real kustomize: every kustomization root is built before and after
the conversion; a root whose containers would get other devices is an error, and nothing it renders
from is written. The cases are the overlays real GitOps repositories use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from translator_cli_support import Runner
from trees import snapshot as _snapshot
from trees import write_tree as _lay_out

from dra_migrate.engine import default_config
from dra_migrate.translator.renders.devices import compare, device_view

pytestmark = pytest.mark.usefixtures("kustomize")  # the real kustomize renders (conftest.py)

TWO_CONTAINERS = """\
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
      - name: b
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 2
"""

ONE_CONTAINER = TWO_CONTAINERS.split("      - name: b")[0]

SMP_PATCH_A_TO_1 = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  template:
    spec:
      containers:
      - name: a
        resources:
          limits:
            nvidia.com/gpu: 1
"""

# An overlay that renames the base's objects: its pods would reference templates it renders renamed.
RENAMED = {"overlays/cpu/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: dev-\n"}

# An overlay that takes container a's GPUs away: the converted patch must take the base's claim away too.
TAKE_GPUS_AWAY = {
    "overlays/cpu/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n",
    "overlays/cpu/gpus.yaml": SMP_PATCH_A_TO_1.replace("gpu: 1", "gpu: 0"),
}


def _rows(stderr: str, rule: str) -> list[dict[str, Any]]:
    return [r for r in json.loads(stderr)["findings"] if r["rule"] == rule]


def _base(root: Path, deployment: str = TWO_CONTAINERS) -> None:
    _lay_out(root, {"base/kustomization.yaml": "resources:\n- deployment.yaml\n", "base/deployment.yaml": deployment})


def _overlay_and_base(root: Path) -> Path:
    """A two-container base and an overlay patching container a to 1 GPU."""
    _base(root)
    return _lay_out(
        root,
        {
            "overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n",
            "overlays/prod/gpus.yaml": SMP_PATCH_A_TO_1,
        },
    )


def _refused_and_untouched(run_cli: Runner, root: Path, *extra: str) -> list[dict[str, Any]]:
    before = _snapshot(root)
    result = run_cli("convert", "--in-place", "--report", "json", *extra, str(root))
    assert result.code == 2, result.stderr
    assert _snapshot(root) == before, "a root that failed verification was written"
    mismatches = _rows(result.stderr, "render-mismatch") + _rows(result.stderr, "render-not-built")
    assert mismatches and all(r["severity"] == "error" for r in mismatches)
    return mismatches


def test_a_base_and_overlays_that_render_the_same_devices_are_verified(run_cli: Runner, tmp_path: Path) -> None:
    _base(tmp_path, ONE_CONTAINER)
    _lay_out(
        tmp_path,
        {
            "overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n",
            "overlays/prod/gpus.yaml": SMP_PATCH_A_TO_1,
            "overlays/dev/kustomization.yaml": "resources:\n- ../../base\nnamespace: dev\n",
        },
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    verified = {Path(r["file"]).parent.name for r in _rows(result.stderr, "render-verified")}
    assert verified == {"base", "prod", "dev"}
    assert "resourceClaims" in (tmp_path / "base" / "deployment.yaml").read_text()


@pytest.mark.parametrize("style", ["patches", "patchesStrategicMerge"])
def test_a_strategic_merge_patch_of_one_container_keeps_the_others_claims(
    run_cli: Runner, tmp_path: Path, kustomize: Path, style: str
) -> None:
    """kustomize's schema does not merge `resourceClaims` by name: the patch's list replaces the base's.
    The converted patch carries the base's other claims, so container b keeps its 2 GPUs and a gets 1."""
    _base(tmp_path)
    listed = "patches:\n- path: gpus.yaml\n" if style == "patches" else "patchesStrategicMerge:\n- gpus.yaml\n"
    _lay_out(
        tmp_path,
        {
            "overlays/prod/kustomization.yaml": "resources:\n- ../../base\n" + listed,
            "overlays/prod/gpus.yaml": SMP_PATCH_A_TO_1,
        },
    )
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.name for r in _rows(result.stderr, "render-verified")} == {"base", "prod"}
    rendered = subprocess.run(
        [str(kustomize), "kustomize", str(tmp_path / "overlays" / "prod")], capture_output=True, text=True, check=True
    ).stdout
    objects = [d for d in yaml.safe_load_all(rendered) if isinstance(d, dict)]
    counts = {
        key[4]: devices for key, devices in device_view(objects, default_config()).items() if key[0] == "Deployment"
    }
    assert counts == {"a": {"gpu.nvidia.com": "1 via claim"}, "b": {"gpu.nvidia.com": "2 via claim"}}


def test_a_patch_that_takes_a_containers_gpus_away_converts_exactly(run_cli: Runner, tmp_path: Path) -> None:
    """`nvidia.com/gpu: 0` in the patch: the converted patch also takes the base's claim away."""
    _base(tmp_path, ONE_CONTAINER)
    _lay_out(tmp_path, TAKE_GPUS_AWAY)
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert {Path(r["file"]).parent.name for r in _rows(result.stderr, "render-verified")} == {"base", "cpu"}


def test_an_overlay_that_renames_the_templates_is_refused(run_cli: Runner, tmp_path: Path) -> None:
    """`namePrefix` renames the base's templates, not the pods' references to them."""
    _base(tmp_path, ONE_CONTAINER)
    _lay_out(tmp_path, RENAMED)
    mismatches = _refused_and_untouched(run_cli, tmp_path)
    assert {Path(r["file"]).parent.name for r in mismatches} == {"cpu"}
    assert any("container a" in r["message"] for r in mismatches)


def test_an_overlay_converted_without_its_base_is_refused_naming_the_base(run_cli: Runner, tmp_path: Path) -> None:
    mismatches = _refused_and_untouched(run_cli, _overlay_and_base(tmp_path) / "overlays")
    assert any("base/deployment.yaml" in r["message"] and "were not converted" in r["message"] for r in mismatches)


def test_an_overlay_without_its_base_is_refused_even_without_kustomize(
    run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DRA_MIGRATE_KUSTOMIZE")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    mismatches = _refused_and_untouched(run_cli, _overlay_and_base(tmp_path) / "overlays")
    assert any("no kustomize or kubectl found" in r["message"] for r in mismatches)


def test_diff_exits_2_for_a_render_that_changes(run_cli: Runner, tmp_path: Path) -> None:
    _base(tmp_path, ONE_CONTAINER)
    _lay_out(tmp_path, RENAMED)
    result = run_cli("diff", "--report", "json", str(tmp_path))
    assert result.code == 2
    assert _rows(result.stderr, "render-mismatch")


@pytest.mark.parametrize("report", ["json", "text", "none"])
def test_the_flag_turns_verification_off_and_every_report_says_so(run_cli: Runner, tmp_path: Path, report: str) -> None:
    _base(tmp_path, ONE_CONTAINER)
    _lay_out(tmp_path, RENAMED)
    result = run_cli("convert", "--in-place", "--report", report, "--no-verify-render", str(tmp_path))
    assert result.code == 0
    assert "render-verified:" not in result.stderr and "render-mismatch" not in result.stderr
    assert '"render-verified"' not in result.stderr
    if report == "json":
        assert json.loads(result.stderr)["summary"]["rootsNotVerified"] == 2
        (row,) = _rows(result.stderr, "render-not-verified")
        assert "--no-verify-render" in row["message"]
    else:  # the one-line summary, printed in a pipe too
        assert "2 kustomization roots NOT render-verified (--no-verify-render)" in result.stderr.splitlines()[-1]


def test_without_kustomize_or_kubectl_a_root_that_renders_a_change_is_refused(
    run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DRA_MIGRATE_KUSTOMIZE")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    _base(tmp_path, ONE_CONTAINER)
    before = (tmp_path / "base" / "deployment.yaml").read_text()
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 2
    (row,) = _rows(result.stderr, "render-not-built")
    assert "no kustomize or kubectl found" in row["message"] and "--no-verify-render" in row["message"]
    assert (tmp_path / "base" / "deployment.yaml").read_text() == before
    assert not (tmp_path / "base" / "dra-migrate-templates.yaml").exists()


def test_a_real_kustomize_binary_renders_the_same_way(run_cli: Runner, tmp_path: Path) -> None:
    """The standalone kustomize (tests/translator/build-kustomize.sh), where it was built, named by the variable."""
    cache = Path(os.environ.get("DRA_MIGRATE_CACHE") or Path.home() / ".cache" / "dra-migrate")
    found = shutil.which("kustomize") or next((str(p) for p in sorted(cache.glob("kustomize-v*/kustomize"))), None)
    if found is None:
        pytest.skip("no standalone kustomize: run tests/translator/build-kustomize.sh")
    os.environ["DRA_MIGRATE_KUSTOMIZE"] = found  # restored by the autouse fixture's monkeypatch
    _base(tmp_path)
    _lay_out(tmp_path, {"overlays/dev/kustomization.yaml": "resources:\n- ../../base\n"})
    result = run_cli("convert", "--in-place", "--report", "json", str(tmp_path))
    assert result.code == 0, result.stderr
    assert len(_rows(result.stderr, "render-verified")) == 2


# -- the comparison itself ------------------------------------------------------------------------


def _pod(containers: list[dict[str, Any]], claims: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if claims is not None:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def _template(name: str, count: int, device_class: str = "gpu.nvidia.com") -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def test_a_claim_for_the_same_count_equals_the_device_plugin_request() -> None:
    config = default_config()
    before = device_view([_pod([{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}])], config)
    claimed = _pod(
        [{"name": "c", "resources": {"claims": [{"name": "g"}]}}], [{"name": "g", "resourceClaimTemplateName": "t"}]
    )
    assert compare(before, device_view([claimed, _template("t", 2)], config)) == []
    problems = compare(before, device_view([claimed, _template("t", 3)], config))
    assert problems == ["Pod p container c: gpu.nvidia.com was 2 via device plugin, would be 3 via claim"]
    missing = compare(before, device_view([claimed], config))
    assert "Pod p container c: claim g uses template t, which the render does not hold" in missing
    assert "Pod p container c: gpu.nvidia.com was 2 via device plugin, would be none" in missing
