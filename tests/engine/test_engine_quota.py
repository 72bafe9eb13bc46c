"""ResourceQuotas keep limiting GPUs after pods move to claims; what a per-class quota cannot say is a warning."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine import Config, Severity, convert, parse_config, serving_classes, with_served_classes


def _quota(hard: dict[str, Any]) -> dict[str, Any]:
    metadata = {"name": "q", "namespace": "ml"}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": metadata, "spec": {"hard": hard}}


def test_device_class_entry_is_added_beside_the_device_plugin_one(config: Config) -> None:
    original = _quota({"requests.nvidia.com/gpu": "4", "requests.cpu": "10", "pods": 20})
    result = convert(original, config)
    assert result.changed and result.object is not None
    assert result.object["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "4",
        "requests.cpu": "10",
        "pods": 20,
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4",
    }
    assert original["spec"]["hard"] == {"requests.nvidia.com/gpu": "4", "requests.cpu": "10", "pods": 20}
    assert [f.rule for f in result.findings] == ["quota-device-class"]


def test_an_entry_set_by_the_user_is_kept_and_unmapped_names_are_ignored(config: Config) -> None:
    hard = {"requests.nvidia.com/gpu": 4, "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 2, "requests.x.io/y": 1}
    result = convert(_quota(hard), config)
    assert not result.changed and result.findings == []


def test_mig_profiles_sharing_a_class_are_summed_with_a_warning(config: Config) -> None:
    result = convert(_quota({"requests.nvidia.com/mig-1g.5gb": 2, "requests.nvidia.com/mig-2g.10gb": "1"}), config)
    assert result.object is not None
    assert result.object["spec"]["hard"]["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == 3
    warnings = [f for f in result.findings if f.severity is Severity.WARNING]
    assert [f.rule for f in warnings] == ["quota-not-expressible"]
    assert "mig-1g.5gb" in warnings[0].message and "per class" in warnings[0].message


def test_names_served_by_kep_5004_keep_their_entry_where_claims_are_charged_to_it() -> None:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression": "true"}}]},
    }
    served = {name: classes[0] for name, classes in serving_classes([device_class]).items()}
    quota = _quota({"requests.nvidia.com/gpu": 4})
    on = convert(quota, with_served_classes(parse_config({}, "1.37"), served))
    assert not on.changed and [f.rule for f in on.findings] == ["quota-kept"]
    off = convert(quota, with_served_classes(parse_config({}, "1.34"), served))  # DRAExtendedResource off
    assert off.changed


def test_kueue_covered_gpu_resources_are_a_warning(config: Config) -> None:
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "team"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": []}]},
    }
    result = convert(queue, config)
    assert not result.changed
    [finding] = result.findings
    assert finding.rule == "quota-not-expressible" and finding.path == "spec.resourceGroups[0].coveredResources[1]"
