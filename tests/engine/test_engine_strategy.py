"""The migration strategy: rewrite to claims, or leave whole-device requests to KEP-5004 (DRAExtendedResource).

Per target release the gate's default decides `auto`; per pod spec and resource, what KEP-5004
cannot serve (nodeName pods, requests needing selectors or config the class lacks) is rewritten.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_support import converted, errors, findings, pod, pod_of, schema_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pods import container, gpu
from test_engine_properties import pods

from dra_migrate.engine import (
    Config,
    ConfigError,
    ServingClass,
    Severity,
    Target,
    build_device_class,
    convert,
    default_config,
    device_class_name,
    parse_config,
    serving_classes,
    with_emitted_classes,
    with_served_classes,
    with_strategy,
)

GPU_CLASS = ServingClass(
    "gpu.nvidia.com",
    ('device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"',),
)
MIG = "nvidia.com/mig-1g.5gb"


def config(target: str, strategy: str = "auto", served: dict[str, ServingClass] | None = None) -> Config:
    return with_served_classes(with_strategy(default_config(target), strategy), served or {})


def paths(result: Any) -> dict[str, str]:
    """resource -> chosen path, from the `migration-path` findings."""
    out = {}
    for finding in findings(result, "migration-path"):
        name, rest = finding.message.split(" -> ", 1)
        out[name] = rest.split(":", 1)[0]
    return out


def gpu_pod(**spec: Any) -> dict[str, Any]:
    return pod_of([container("trainer", gpu(2))], **spec)


@pytest.mark.parametrize(
    ("target", "expected"),
    [("1.34", "claim"), ("1.35", "claim"), ("1.36", "extended-resource"), ("1.37", "extended-resource")],
)
def test_auto_follows_the_gate_default_of_the_target(target: str, expected: str) -> None:
    result = convert(gpu_pod(), config(target, served={"nvidia.com/gpu": GPU_CLASS}))
    assert paths(result) == {"nvidia.com/gpu": expected}
    assert not errors(result)
    if expected == "claim":
        assert result.changed and result.templates
        (finding,) = findings(result, "migration-path")
        assert "DRAExtendedResource is off by default" in finding.message
    else:
        assert not result.changed and result.object == gpu_pod()
        assert [spec.resource for spec in result.extended] == ["nvidia.com/gpu"]


def test_auto_rewrites_names_no_known_class_maps() -> None:
    result = convert(gpu_pod(), config("1.37"))
    assert result.changed and paths(result) == {"nvidia.com/gpu": "claim"}
    assert "no known DeviceClass maps nvidia.com/gpu" in findings(result, "migration-path")[0].message


def test_claims_strategy_always_rewrites() -> None:
    result = convert(gpu_pod(), config("1.37", "claims", {"nvidia.com/gpu": GPU_CLASS}))
    assert result.changed and paths(result) == {"nvidia.com/gpu": "claim"}


def test_node_name_pods_are_rewritten_because_they_bypass_the_scheduler() -> None:
    original = gpu_pod(nodeName="gpu-node-1")
    result = convert(copy.deepcopy(original), config("1.37", served={"nvidia.com/gpu": GPU_CLASS}))
    spec = converted(result)["spec"]
    assert paths(result) == {"nvidia.com/gpu": "claim"}
    assert "nodeName" not in spec and spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-1"}
    assert spec["resourceClaims"] and not schema_errors(converted(result), Target.parse("1.37"))


def test_selectors_the_serving_class_lacks_need_a_claim() -> None:
    generic = ServingClass("mig.nvidia.com", ('device.attributes["gpu.nvidia.com"].type == "mig"',))
    result = convert(pod_of([container("infer", gpu(1, MIG))]), config("1.37", served={MIG: generic}))
    assert paths(result) == {MIG: "claim"} and result.changed
    assert "does not carry" in findings(result, "migration-path")[0].message


def test_a_class_that_carries_the_profile_selector_serves_the_mig_name() -> None:
    spec = default_config("1.37").mappings.resolve(MIG)
    per_profile = serving_classes([build_device_class(spec)])  # type: ignore[arg-type]
    result = convert(pod_of([container("infer", gpu(1, MIG))]), config("1.37", served={MIG: per_profile[MIG][0]}))
    assert paths(result) == {MIG: "extended-resource"} and not result.changed


def test_one_pod_can_take_both_paths() -> None:
    two = pod_of([container("a", {"nvidia.com/gpu": 1, MIG: 1})])
    result = convert(two, config("1.37", served={"nvidia.com/gpu": GPU_CLASS}))
    after = converted(result)["spec"]["containers"][0]["resources"]
    assert paths(result) == {"nvidia.com/gpu": "extended-resource", MIG: "claim"}
    assert after["limits"] == {"nvidia.com/gpu": 1} and after["claims"]


def test_extended_resource_strategy_keeps_and_warns_when_the_target_cannot_serve() -> None:
    result = convert(gpu_pod(), config("1.35", "extendedResource"))
    assert not result.changed and paths(result) == {"nvidia.com/gpu": "extended-resource"}
    (warning,) = findings(result, "extended-resource-unserved", Severity.WARNING)
    assert "DRAExtendedResource is off by default in Kubernetes 1.35" in warning.message
    assert "no known DeviceClass maps nvidia.com/gpu" in warning.message


def test_emitted_classes_count_as_serving() -> None:
    emitting = with_emitted_classes(config("1.37"))
    result = convert(pod_of([container("a", {"nvidia.com/gpu": 2, MIG: 1})]), emitting)
    assert not result.changed and sorted(s.resource for s in result.extended) == sorted([MIG, "nvidia.com/gpu"])


@pytest.mark.parametrize("target", ["1.34", "1.35", "1.36", "1.37"])
def test_emitted_device_classes_are_valid_and_distinct_per_name(target: str) -> None:
    table = default_config(target).mappings
    names = ["nvidia.com/gpu", MIG, "nvidia.com/mig-2g.20gb", "amd.com/gpu", "gpu.intel.com/xe"]
    classes = [build_device_class(table.resolve(name)) for name in names]  # type: ignore[arg-type]
    assert len({c["metadata"]["name"] for c in classes}) == len(names)
    for device_class, name in zip(classes, names, strict=True):
        assert device_class["spec"]["extendedResourceName"] == name
        assert not schema_errors(device_class, Target.parse(target)), device_class
    mig = classes[1]["spec"]["selectors"]
    assert any('profile == "1g.5gb"' in s["cel"]["expression"] for s in mig)
    assert any('type == "mig"' in s["cel"]["expression"] for s in mig)


def test_device_class_names_read_as_the_resource_and_never_collide() -> None:
    assert device_class_name("nvidia.com/gpu") == "nvidia.com-gpu"
    assert device_class_name("nvidia.com/mig-1g.10gb+me") != device_class_name("nvidia.com/mig-1g.10gb-me")


def test_the_scheduler_picks_the_newest_class_then_the_first_name() -> None:
    def device_class(name: str, created: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name}
        if created:
            metadata["creationTimestamp"] = created
        return {"metadata": metadata, "spec": {"extendedResourceName": "nvidia.com/gpu"}}

    picked = serving_classes(
        [device_class("b", "2026-01-01T00:00:00Z"), device_class("c", "2026-02-01T00:00:00Z"), device_class("a", None)]
    )
    assert [c.name for c in picked["nvidia.com/gpu"]] == ["c", "b", "a"]
    assert [c.name for c in serving_classes([device_class("z", None), device_class("y", None)])["nvidia.com/gpu"]] == [
        "y",
        "z",
    ]


def test_kinds_without_a_pod_spec_are_served_by_kep_5004_instead_of_reported() -> None:
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}},
    }
    served = convert(trainjob, config("1.37", served={"nvidia.com/gpu": GPU_CLASS}))
    assert not findings(served, "unsupported-kind") and paths(served) == {"nvidia.com/gpu": "extended-resource"}
    assert findings(convert(trainjob, config("1.34")), "unsupported-kind")


def test_config_file_keys() -> None:
    parsed = parse_config(
        {
            "strategy": "extendedResource",
            "clusterDeviceClasses": [{"name": "gpu.nvidia.com", "extendedResourceName": "nvidia.com/gpu"}],
        }
    )
    assert parsed.strategy == "extendedResource" and parsed.served["nvidia.com/gpu"].name == "gpu.nvidia.com"
    with pytest.raises(ConfigError, match=r"^strategy:"):
        parse_config({"strategy": "sometimes"})
    with pytest.raises(ConfigError, match=r"^clusterDeviceClasses\[0\]"):
        parse_config({"clusterDeviceClasses": [{"name": "Bad_Name", "extendedResourceName": "x.io/y"}]})


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(pods(), st.sampled_from(["1.36", "1.37"]))
def test_every_mapped_name_takes_exactly_one_path_and_keeps_its_count(original: dict[str, Any], target: str) -> None:
    """With every name served, a pod without nodeName keeps all its device-plugin requests untouched and
    a pinned pod converts all of them; either way each converted name is reported once."""
    emitting = with_emitted_classes(config(target))
    result = convert(copy.deepcopy(original), emitting)
    assert not errors(result)
    chosen = paths(result)
    pinned = bool(original["spec"].get("nodeName"))
    assert set(chosen.values()) <= {"claim" if pinned else "extended-resource"}
    if not pinned:
        assert not result.templates
        before = [c.get("resources") for c in original["spec"]["containers"]]
        after = [c.get("resources") for c in converted(result)["spec"]["containers"]]
        assert before == after


def test_pod_builder_is_a_pod() -> None:
    assert pod({"containers": []})["kind"] == "Pod"
