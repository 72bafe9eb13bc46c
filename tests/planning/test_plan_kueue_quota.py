"""The Kueue configuration plan writes passes the rules of Kueue's validateDeviceClassMappings
(kubernetes-sigs/kueue pkg/config/validation.go, v0.20) and its path separation; share quotas say what
limits shares after the move."""

from __future__ import annotations

from typing import Any

from planning_support import api_node
from test_node_model import configs, helm_plugin, plan_of

MAX_MAPPINGS, MAX_CLASSES = 16, 8


def kueue_problems(configuration: dict[str, Any], extended_classes: set[str]) -> list[str]:
    """Kueue's rules for deviceClassMappings without counter sources, as its validation states them."""
    problems = []
    mappings = configuration["resources"]["deviceClassMappings"]
    if len(mappings) > MAX_MAPPINGS:
        problems.append("too many mappings")
    names: set[str] = set()
    owner: dict[str, str] = {}
    for mapping in mappings:
        if mapping["name"] in names:
            problems.append(f"duplicate name {mapping['name']}")
        names.add(mapping["name"])
        classes = mapping["deviceClassNames"]
        if not 1 <= len(classes) <= MAX_CLASSES or len(set(classes)) != len(classes):
            problems.append(f"{mapping['name']}: deviceClassNames {classes}")
        for device_class in classes:
            if owner.setdefault(device_class, mapping["name"]) != mapping["name"]:
                problems.append(f"{device_class} already mapped to resource {owner[device_class]}")
            if device_class in extended_classes:
                problems.append(f"{device_class} has extendedResourceName (path separation)")
    return problems


def cluster_queue(*covered: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "research"},
        "spec": {"resourceGroups": [{"coveredResources": list(covered), "flavors": []}]},
    }


def device_class(name: str, extended: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": 'device.driver == "gpu.amd.com"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def test_the_kueue_config_maps_each_class_to_one_resource_and_never_an_extended_resource_class() -> None:
    queue = cluster_queue(
        "cpu", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "amd.com/gpu", "gpu.intel.com/i915"
    )
    plan = plan_of(
        api_node("a", {"pool": "a"}, {"nvidia.com/gpu": "8"}), queue, device_class("gpu.amd.com", "amd.com/gpu")
    )
    assert plan["kueue"] is not None
    assert kueue_problems(plan["kueue"], {"gpu.amd.com"}) == []
    mapped = {m["name"]: m["deviceClassNames"] for m in plan["kueue"]["resources"]["deviceClassMappings"]}
    assert mapped == {"nvidia.com/gpu": ["gpu.nvidia.com"], "gpu.intel.com/i915": ["gpu.intel.com"]}
    said = " ".join(plan["warnings"])
    assert "nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb all become claims of DeviceClass mig.nvidia.com" in said
    assert "DeviceClass gpu.amd.com has extendedResourceName" in said


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
    mapping = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}],
            "extendedResourceName": "nvidia.com/gpu",
        },
    }
    (quota,) = plan_of(*objects, mapping, consumable_shares=True)["quotas"]
    assert any("keeps limiting shares one for one" in p for p in quota["problems"])
