"""The Kueue configuration plan writes is one Kueue accepts, judged by Kueue's own configuration loading
and validation (tests/common/kueue.py, built from sigs.k8s.io/kueue v0.17.0), and keeps Kueue's path
separation; share quotas say what limits shares after the move."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue import kueue_configuration, kueue_verdict, require_kueue_config_check
from planning_support import api_node, cluster_state, device_class
from test_node_model import configs, helm_plugin, plan_of

from dra_migrate.cli import main
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.planning.write import KUEUE


def cluster_queue(*covered: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "research"},
        "spec": {"resourceGroups": [{"coveredResources": list(covered), "flavors": []}]},
    }


def kueue_cluster() -> tuple[dict[str, Any], ...]:
    """A queue covering two MIG names that become claims of one class and a name whose class has
    extendedResourceName."""
    return (
        api_node("a", {"pool": "a"}, {"nvidia.com/gpu": "8"}),
        cluster_queue(
            "cpu",
            "nvidia.com/gpu",
            "nvidia.com/mig-1g.10gb",
            "nvidia.com/mig-2g.20gb",
            "amd.com/gpu",
            "gpu.intel.com/i915",
        ),
        device_class("gpu.amd.com", "gpu.amd.com", "amd.com/gpu"),
    )


def test_the_kueue_config_maps_each_class_to_one_resource_and_never_an_extended_resource_class() -> None:
    """Kueue's documentation (site/content/en/docs/concepts/dynamic_resource_allocation.md, "Path
    separation"): a DeviceClass with extendedResourceName is counted by that name, and configuring it in
    deviceClassMappings too may make quota accounting wrong. Kueue's validation does not refuse such a
    mapping (below), so the plan keeps the rule itself."""
    plan = plan_of(*kueue_cluster())
    assert plan["kueue"] is not None
    mapped = {m["name"]: m["deviceClassNames"] for m in plan["kueue"]["resources"]["deviceClassMappings"]}
    assert mapped == {"nvidia.com/gpu": ["gpu.nvidia.com"], "gpu.intel.com/i915": ["gpu.intel.com"]}
    assert not any("gpu.amd.com" in classes for classes in mapped.values())
    said = " ".join(plan["warnings"])
    assert "nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb all become claims of DeviceClass mig.nvidia.com" in said
    assert "DeviceClass gpu.amd.com has extendedResourceName" in said


def written_kueue_config(tmp_path: Path, *flags: str) -> dict[str, Any]:
    """What `plan --write` writes for Kueue, from a snapshot of the cluster above."""
    write_snapshot(cluster_state(*kueue_cluster(), server_version="v1.37.2"), tmp_path / "cluster")
    code = main(["plan", "--cluster", str(tmp_path / "cluster"), "--write", str(tmp_path / "out"), *flags])
    assert code in (0, 1), code
    (fragment,) = yaml.safe_load_all((tmp_path / "out" / KUEUE).read_text())
    assert isinstance(fragment, dict) and set(fragment) == {"resources"}
    return fragment


@pytest.mark.parametrize("flags", [(), ("--consumable-shares",)], ids=["whole-gpus", "consumable-shares"])
def test_kueue_accepts_the_written_kueue_config(tmp_path: Path, flags: tuple[str, ...]) -> None:
    check = require_kueue_config_check()
    fragment = written_kueue_config(tmp_path, *flags)
    verdict = kueue_verdict(check, kueue_configuration(fragment), tmp_path)
    assert verdict.accepted, verdict.output
    assert verdict.output == "valid"


def test_kueue_validation_leaves_path_separation_to_the_plan(tmp_path: Path) -> None:
    """Why the rule above is the plan's: Kueue's validation accepts a mapped class that has extendedResourceName."""
    check = require_kueue_config_check()
    fragment = written_kueue_config(tmp_path)
    fragment["resources"]["deviceClassMappings"].append({"name": "amd.com/gpu", "deviceClassNames": ["gpu.amd.com"]})
    verdict = kueue_verdict(check, kueue_configuration(fragment), tmp_path)
    assert verdict.accepted, verdict.output


def test_kueue_refuses_one_class_mapped_to_two_resources(tmp_path: Path) -> None:
    """The defect the plan avoids: the MIG names of the queue would all map mig.nvidia.com."""
    check = require_kueue_config_check()
    fragment = written_kueue_config(tmp_path)
    mappings = fragment["resources"]["deviceClassMappings"]
    index = len(mappings)
    mappings += [
        {"name": "nvidia.com/mig-1g.10gb", "deviceClassNames": ["mig.nvidia.com"]},
        {"name": "nvidia.com/mig-2g.20gb", "deviceClassNames": ["mig.nvidia.com"]},
    ]
    verdict = kueue_verdict(check, kueue_configuration(fragment), tmp_path)
    assert not verdict.accepted
    assert (
        f'resources.deviceClassMappings[{index + 1}].deviceClassNames[0]: Invalid value: "mig.nvidia.com": '
        "device class already mapped to resource nvidia.com/mig-1g.10gb"
    ) in verdict.output


def test_kueue_refuses_a_duplicate_mapping_name(tmp_path: Path) -> None:
    check = require_kueue_config_check()
    fragment = written_kueue_config(tmp_path)
    mappings = fragment["resources"]["deviceClassMappings"]
    first = mappings[0]
    mappings.append({"name": first["name"], "deviceClassNames": ["mig.nvidia.com"]})
    verdict = kueue_verdict(check, kueue_configuration(fragment), tmp_path)
    assert not verdict.accepted
    assert f'resources.deviceClassMappings[{len(mappings) - 1}].name: Duplicate value: "{first["name"]}"' in (
        verdict.output
    )


TIME_SLICED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"


def gpu_quota() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "ml"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "8"}},
    }


def test_share_quotas_say_what_limits_shares_after_the_move() -> None:
    """On 1.37 a share claim of gpu.nvidia.com counts against requests.nvidia.com/gpu when that class maps
    the name; without such a class only the per-class key limits it."""
    node = api_node("ts-0", {"pool": "ts"}, {"nvidia.com/gpu": "16"})
    objects = (node, helm_plugin(), configs(default=TIME_SLICED), gpu_quota())
    (quota,) = plan_of(*objects, consumable_shares=True)["quotas"]
    assert any("no longer limits them" in p for p in quota["problems"])
    mapping = device_class("gpu.nvidia.com", "gpu.nvidia.com", "nvidia.com/gpu")
    (quota,) = plan_of(*objects, mapping, consumable_shares=True)["quotas"]
    assert any("keeps limiting shares one for one" in p for p in quota["problems"])
