"""resource.k8s.io objects between API versions (docs/dra-api.md sections 1, 2 and 2.7)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_support import T132, T133, T134, T135, converted, error_keys, errors, findings, schema_errors

from dra_migrate.engine import Severity, Target, TargetVersionError, convert, parse_config

CEL = 'device.attributes["gpu.example.com"].model == "A100"'
OPAQUE = {
    "driver": "gpu.example.com",
    "parameters": {"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig"},
}


def cfg(target: str) -> Any:
    return parse_config({}, target)


def v1_claim_spec() -> dict[str, Any]:
    return {
        "devices": {
            "requests": [
                {
                    "name": "gpus",
                    "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {"expression": CEL}}],
                        "allocationMode": "ExactCount",
                        "count": 2,
                    },
                },
                {"name": "all", "exactly": {"deviceClassName": "nic.example.com", "allocationMode": "All"}},
            ],
            "constraints": [{"requests": ["gpus"], "matchAttribute": "gpu.example.com/model"}],
            "config": [{"requests": ["gpus"], "opaque": OPAQUE}],
        }
    }


def flat_claim_spec() -> dict[str, Any]:
    """The same claim in the v1alpha3/v1beta1 shape (request fields without `exactly:`)."""
    spec = v1_claim_spec()
    for request in spec["devices"]["requests"]:
        request.update(request.pop("exactly"))
    return spec


def template(version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu-template", "namespace": "ns"},
        "spec": {"metadata": {"labels": {"team": "a"}}, "spec": spec},
    }


def claim(version: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": spec,
        **extra,
    }


# --- targets ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [("1.32", "v1beta1"), ("1.33", "v1beta2"), ("1.34", "v1"), ("1.35", "v1"), ("v1.34.2", "v1"), ("1.37", "v1")],
)
def test_target_versions(text: str, version: str) -> None:
    target = Target.parse(text)
    assert target.dra_version == version
    assert target.dra_api_version == f"resource.k8s.io/{version}"
    assert cfg(text).target == target


@pytest.mark.parametrize("text", ["1.31", "1.26", "2", "latest"])
def test_unsupported_targets(text: str) -> None:
    with pytest.raises(TargetVersionError):
        Target.parse(text)


# --- claims and templates ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1alpha3", "v1beta1"])
def test_flat_claim_template_upgrades_to_v1(version: str) -> None:
    original = template(version, flat_claim_spec())
    result = convert(original, cfg("1.34"))
    assert result.changed and not errors(result)
    assert result.object == template("v1", v1_claim_spec())
    assert [f.rule for f in findings(result, severity=Severity.INFO)] == ["api-version"]
    assert schema_errors(converted(result), T134) == ()


def test_v1beta1_upgrades_to_v1beta2_for_133() -> None:
    result = convert(template("v1beta1", flat_claim_spec()), cfg("1.33"))
    assert result.object == template("v1beta2", v1_claim_spec())
    assert schema_errors(converted(result), T133) == ()


@pytest.mark.parametrize(("version", "target"), [("v1beta2", "1.34"), ("v1", "1.33"), ("v1beta2", "1.35")])
def test_v1beta2_and_v1_differ_only_in_api_version(version: str, target: str) -> None:
    result = convert(template(version, v1_claim_spec()), cfg(target))
    expected = template(cfg(target).target.dra_version, v1_claim_spec())
    assert result.changed and result.object == expected
    assert schema_errors(converted(result), Target.parse(target)) == ()


@pytest.mark.parametrize("target", ["1.34", "1.35"])
def test_v1_on_a_v1_target_is_unchanged(target: str) -> None:
    original = template("v1", v1_claim_spec())
    result = convert(original, cfg(target))
    assert not result.changed and result.object is original
    assert result.problems == []


def test_v1_downgrades_to_v1beta1_exactly_flattened() -> None:
    result = convert(template("v1", v1_claim_spec()), cfg("1.32"))
    assert result.changed and not errors(result)
    assert result.object == template("v1beta1", flat_claim_spec())
    assert schema_errors(converted(result), T132) == ()


def test_v1_claim_downgrade_and_status_is_dropped() -> None:
    original = claim("v1", v1_claim_spec(), status={"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]})
    result = convert(original, cfg("1.32"))
    assert result.object == claim("v1beta1", flat_claim_spec())
    assert schema_errors(converted(result), T132) == ()
    upgraded = convert(claim("v1beta1", flat_claim_spec(), status={"devices": []}), cfg("1.34"))
    assert upgraded.object == claim("v1", v1_claim_spec())


def test_admin_access_false_is_omitted_and_true_is_warned() -> None:
    spec = {"devices": {"requests": [{"name": "r", "deviceClassName": "c", "adminAccess": False}]}}
    result = convert(claim("v1beta1", spec), cfg("1.34"))
    assert converted(result)["spec"] == {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}
    assert not findings(result, "admin-access")

    spec = {"devices": {"requests": [{"name": "r", "deviceClassName": "c", "adminAccess": True}]}}
    for target, label in (("1.34", "resource.kubernetes.io/admin-access"), ("1.33", "resource.k8s.io/admin-access")):
        result = convert(claim("v1beta1", copy.deepcopy(spec)), cfg(target))
        (warning,) = findings(result, "admin-access", Severity.WARNING)
        assert warning.path == "spec.devices.requests[0].exactly.adminAccess"
        assert label in warning.message


def test_v1alpha2_claim_with_resource_class_name() -> None:
    original = claim(
        "v1alpha2", {"resourceClassName": "gpu.example.com", "allocationMode": "Immediate"}, status={"driverName": "x"}
    )
    result = convert(original, cfg("1.34"))
    assert result.object == claim(
        "v1", {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
    )
    warnings = {(w.rule, w.path) for w in findings(result, severity=Severity.WARNING)}
    assert warnings == {("immediate-allocation-dropped", "spec.allocationMode"), ("status-dropped", "status")}
    assert schema_errors(converted(result), T134) == ()


def test_v1alpha2_template_wait_for_first_consumer_is_dropped_silently() -> None:
    original = template("v1alpha2", {"resourceClassName": "gpu.example.com", "allocationMode": "WaitForFirstConsumer"})
    for target, request in (
        ("1.34", {"name": "req-0", "exactly": {"deviceClassName": "gpu.example.com"}}),
        ("1.32", {"name": "req-0", "deviceClassName": "gpu.example.com"}),
    ):
        result = convert(original, cfg(target))
        assert converted(result)["spec"]["spec"] == {"devices": {"requests": [request]}}
        assert converted(result)["spec"]["metadata"] == {"labels": {"team": "a"}}
        # nothing about the dropped mode; 1.32 serves v1beta1 only when enabled, which is said
        off = ["api-off-by-default"] if target == "1.32" else []
        assert [f.rule for f in findings(result, severity=Severity.WARNING)] == off
        assert schema_errors(converted(result), Target.parse(target)) == ()


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (
            claim("v1alpha2", {"resourceClassName": "c", "parametersRef": {"kind": "GpuClaimParameters", "name": "p"}}),
            "spec.parametersRef",
        ),
        (
            template(
                "v1alpha2", {"resourceClassName": "c", "parametersRef": {"kind": "GpuClaimParameters", "name": "p"}}
            ),
            "spec.spec.parametersRef",
        ),
        (
            template(
                "v1alpha1", {"resourceClassName": "c", "parametersRef": {"kind": "GpuClaimParameters", "name": "p"}}
            ),
            "spec.spec.parametersRef",
        ),
        (
            claim(
                "v1alpha3",
                {"controller": "gpu.example.com", "devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}},
            ),
            "spec.controller",
        ),
        (template("v1alpha3", {"controller": "gpu.example.com", "devices": {}}), "spec.spec.controller"),
    ],
    ids=[
        "claim-parametersRef",
        "template-parametersRef",
        "v1alpha1-parametersRef",
        "claim-controller",
        "template-controller",
    ],
)
def test_classic_dra_is_an_error_and_the_object_is_unchanged(obj: dict[str, Any], path: str) -> None:
    frozen = copy.deepcopy(obj)
    result = convert(obj, cfg("1.34"))
    assert not result.changed and result.object == frozen
    assert error_keys(result) == {("classic-dra", path)}


# --- DeviceClass ------------------------------------------------------------------------------------


def resource_class(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha2",
        "kind": "ResourceClass",
        "metadata": {"name": "gpu.example.com"},
        **fields,
    }


def test_resource_class_becomes_a_device_class_with_a_driver_selector() -> None:
    original = resource_class(
        driverName="gpu.resource.example.com", structuredParameters=True, suitableNodes={"nodeSelectorTerms": []}
    )
    for target in ("1.34", "1.32"):
        result = convert(original, cfg(target))
        assert result.object == {
            "apiVersion": cfg(target).target.dra_api_version,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.resource.example.com"'}}]},
        }
        off = {"api-off-by-default"} if target in ("1.32", "1.33") else set()
        assert {f.rule for f in findings(result, severity=Severity.WARNING)} == {
            "driver-name-to-selector",
            "suitable-nodes-dropped",
            *off,
        }
        assert schema_errors(converted(result), Target.parse(target)) == ()


def test_resource_class_with_parameters_ref_is_an_error() -> None:
    original = resource_class(driverName="d", parametersRef={"kind": "GpuClassParameters", "name": "p"})
    result = convert(original, cfg("1.34"))
    assert not result.changed and result.object == original
    assert error_keys(result) == {("classic-dra", "parametersRef")}


def test_device_class_versions() -> None:
    spec = {"selectors": [{"cel": {"expression": CEL}}], "config": [{"opaque": OPAQUE}]}
    for source in ("v1alpha3", "v1beta1", "v1beta2"):
        obj = {
            "apiVersion": f"resource.k8s.io/{source}",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": copy.deepcopy(spec),
        }
        result = convert(obj, cfg("1.34"))
        assert result.object == {**obj, "apiVersion": "resource.k8s.io/v1"}
        assert schema_errors(converted(result), T134) == ()
    v1 = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "g"},
        "spec": copy.deepcopy(spec),
    }
    down = convert(v1, cfg("1.32"))
    assert down.object == {**v1, "apiVersion": "resource.k8s.io/v1beta1"}
    assert schema_errors(converted(down), T132) == ()


def test_device_class_suitable_nodes_of_131_is_dropped_with_a_warning() -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceClass",
        "metadata": {"name": "g"},
        "spec": {"suitableNodes": {"nodeSelectorTerms": []}},
    }
    result = convert(obj, cfg("1.34"))
    assert converted(result)["spec"] == {}
    assert [(f.rule, f.path) for f in findings(result, severity=Severity.WARNING)] == [
        ("suitable-nodes-dropped", "spec.suitableNodes")
    ]


@pytest.mark.parametrize(
    ("target", "severity", "rule"),
    [
        ("1.33", Severity.ERROR, "field-not-in-target"),
        ("1.34", Severity.WARNING, "feature-gate-off"),
        ("1.35", Severity.WARNING, "feature-gate-off"),
        ("1.36", None, None),
    ],
)
def test_extended_resource_name(target: str, severity: Severity | None, rule: str | None) -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"extendedResourceName": "example.com/gpu"},
    }
    result = convert(obj, cfg(target))
    problems = [(f.severity, f.rule, f.path) for f in result.problems]
    if severity is None:
        assert problems == []
    else:
        assert problems == [(severity, rule, "spec.extendedResourceName")]
    if severity is Severity.ERROR:
        assert result.object == obj and not result.changed


# --- firstAvailable, tolerations ----------------------------------------------------------------------


def first_available_template(version: str = "v1") -> dict[str, Any]:
    return template(
        version,
        {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {
                                "name": "big",
                                "deviceClassName": "gpu.example.com",
                                "selectors": [{"cel": {"expression": CEL}}],
                            },
                            {"name": "small", "deviceClassName": "gpu.example.com", "count": 2},
                        ],
                    }
                ]
            }
        },
    )


def test_first_available_on_134_is_fine() -> None:
    original = first_available_template()
    result = convert(original, cfg("1.34"))
    assert not result.changed and result.problems == []


def test_first_available_on_133_is_a_warning() -> None:
    result = convert(first_available_template(), cfg("1.33"))
    assert result.changed and result.object == first_available_template("v1beta2")
    assert [(f.severity, f.rule, f.path) for f in result.problems] == [
        (Severity.WARNING, "feature-gate-off", "spec.spec.devices.requests[0].firstAvailable"),
        (Severity.WARNING, "api-off-by-default", "apiVersion"),
    ]
    assert "DRAPrioritizedList" in result.problems[0].message
    assert schema_errors(converted(result), T133) == ()


def test_first_available_on_132_is_an_error() -> None:
    original = first_available_template()
    result = convert(original, cfg("1.32"))
    assert not result.changed and result.object == original
    assert error_keys(result) == {("field-not-in-target", "spec.spec.devices.requests[0].firstAvailable")}


def test_v1beta1_first_available_is_copied_as_is() -> None:
    result = convert(first_available_template("v1beta1"), cfg("1.34"))
    assert result.object == first_available_template("v1")


def test_tolerations_are_an_error_on_132_and_a_gate_warning_after() -> None:
    spec = {
        "devices": {
            "requests": [
                {"name": "r", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k", "operator": "Exists"}]}}
            ]
        }
    }
    path = "spec.devices.requests[0].exactly.tolerations"
    assert error_keys(convert(claim("v1", copy.deepcopy(spec)), cfg("1.32"))) == {("field-not-in-target", path)}
    result = convert(claim("v1", copy.deepcopy(spec)), cfg("1.34"))
    assert [(f.rule, f.path) for f in result.problems] == [("feature-gate-off", path)]


# --- ResourceSlice ------------------------------------------------------------------------------------


def slice_spec(devices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        **extra,
        "devices": devices,
    }


def resource_slice(version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpu"},
        "spec": spec,
    }


V1_DEVICE = {"name": "gpu-0", "attributes": {"model": {"string": "A100"}}, "capacity": {"memory": {"value": "40Gi"}}}
BASIC_DEVICE = {
    "name": "gpu-0",
    "basic": {"attributes": {"model": {"string": "A100"}}, "capacity": {"memory": {"value": "40Gi"}}},
}


def test_v1beta1_slice_is_unwrapped_and_empty_node_fields_dropped() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}
    original = resource_slice(
        "v1beta1", slice_spec([copy.deepcopy(BASIC_DEVICE)], nodeName="", allNodes=False, nodeSelector=selector)
    )
    result = convert(original, cfg("1.34"))
    assert result.object == resource_slice("v1", slice_spec([V1_DEVICE], nodeSelector=selector))
    assert [f.rule for f in findings(result, severity=Severity.WARNING)] == ["resource-slice"]
    assert schema_errors(converted(result), T134) == ()


def test_v1alpha3_slice_capacity_becomes_a_value() -> None:
    device = {"name": "gpu-0", "basic": {"attributes": {"model": {"string": "A100"}}, "capacity": {"memory": "40Gi"}}}
    result = convert(resource_slice("v1alpha3", slice_spec([device], nodeName="node-1")), cfg("1.34"))
    assert result.object == resource_slice("v1", slice_spec([V1_DEVICE], nodeName="node-1"))
    assert schema_errors(converted(result), T134) == ()


def test_v1_slice_downgrade_gets_the_basic_wrapper() -> None:
    result = convert(resource_slice("v1", slice_spec([copy.deepcopy(V1_DEVICE)], nodeName="node-1")), cfg("1.32"))
    assert result.object == resource_slice("v1beta1", slice_spec([BASIC_DEVICE], nodeName="node-1"))
    assert schema_errors(converted(result), T132) == ()


def test_v1alpha2_named_resources_slice() -> None:
    original = {
        "apiVersion": "resource.k8s.io/v1alpha2",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "nodeName": "node-1",
        "driverName": "gpu.example.com",
        "namedResources": {
            "instances": [
                {
                    "name": "gpu-0",
                    "attributes": [
                        {"name": "model", "string": "A100"},
                        {"name": "memory", "quantity": "40Gi"},
                        {"name": "cores", "intSlice": {"ints": [1, 2]}},
                    ],
                }
            ]
        },
    }
    result = convert(original, cfg("1.34"))
    assert result.object == resource_slice(
        "v1",
        {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [V1_DEVICE],
        },
    ) | {"metadata": {"name": "s"}}
    assert {f.rule for f in findings(result, severity=Severity.WARNING)} == {
        "quantity-attribute-to-capacity",
        "slice-attribute-dropped",
        "resource-slice",
    }
    assert schema_errors(converted(result), T134) == ()


# --- objects with no equivalent ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["PodSchedulingContext", "PodScheduling"])
def test_pod_scheduling_context_is_dropped_with_a_warning(kind: str) -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1alpha2",
        "kind": kind,
        "metadata": {"name": "p"},
        "spec": {"selectedNode": "n"},
    }
    result = convert(obj, cfg("1.34"))
    assert result.changed and result.dropped and result.object is None
    assert [(f.severity, f.rule) for f in result.findings] == [(Severity.WARNING, "runtime-object-dropped")]


@pytest.mark.parametrize("kind", ["ResourceClaimParameters", "ResourceClassParameters"])
def test_structured_parameters_of_130_are_an_error(kind: str) -> None:
    obj = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": kind, "metadata": {"name": "p"}, "vendorParameters": []}
    result = convert(obj, cfg("1.34"))
    assert not result.changed and result.object == obj
    assert [f.rule for f in errors(result)] == ["structured-parameters-1.30"]


@pytest.mark.parametrize(
    ("version", "target", "written"),
    [
        ("v1alpha3", "1.32", None),  # 1.32 serves no version of it: an error, left as is
        ("v1alpha3", "1.33", "v1alpha3"),
        ("v1alpha3", "1.35", "v1alpha3"),
        ("v1beta2", "1.34", "v1alpha3"),
        ("v1beta2", "1.36", "v1beta2"),
        ("v1", "1.36", "v1beta2"),
        ("v1", "1.37", "v1"),
        ("v1beta2", "1.37", "v1"),  # 1.37 serves v1 by default (DRADeviceTaintRules GA)
        ("v1alpha3", "1.37", "v1"),
    ],
)
def test_device_taint_rule_goes_to_the_version_the_release_table_prefers(
    version: str, target: str, written: str | None
) -> None:
    obj = {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "r"},
        "spec": {"deviceSelector": {"driver": "gpu.example.com"}, "taint": {"key": "k", "effect": "NoSchedule"}},
    }
    result = convert(obj, cfg(target))
    if written is None:
        assert not result.changed and result.object is obj
        assert error_keys(result) == {("not-served", "apiVersion")}
        return
    out = converted(result) if result.changed else obj
    assert out["apiVersion"] == f"resource.k8s.io/{written}" and out["spec"] == obj["spec"]
    assert result.changed == (written != version)
    warnings = {f.rule for f in result.findings if f.severity is Severity.WARNING}
    assert warnings == (set() if written == "v1" else {"api-off-by-default"})  # alpha/beta only when enabled
    assert schema_errors(out, Target.parse(target)) == ()


def test_unknown_kinds_of_the_group_are_left_alone() -> None:
    obj = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest", "metadata": {"name": "x"}}
    result = convert(obj, cfg("1.34"))
    assert not result.changed and result.object is obj and result.findings == []


# --- invalid constructs from blog posts -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "rule", "path"),
    [
        (
            claim(
                "v1beta1",
                {
                    "allocationMode": "WaitForFirstConsumer",
                    "devices": {"requests": [{"name": "r", "deviceClassName": "c"}]},
                },
            ),
            "invalid-claim-allocation-mode",
            "spec.allocationMode",
        ),
        (
            template(
                "v1beta1",
                {"allocationMode": "Immediate", "devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}},
            ),
            "invalid-claim-allocation-mode",
            "spec.spec.allocationMode",
        ),
        (
            claim(
                "v1",
                {
                    "devices": {
                        "requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}],
                        "constraints": [{"attributes": ["model"]}],
                    }
                },
            ),
            "invalid-constraint-attributes",
            "spec.devices.constraints[0].attributes",
        ),
        (
            claim("v1", {"devices": {"requests": [{"name": "r", "deviceClassName": "c", "count": 2}]}}),
            "flat-request-in-v1",
            "spec.devices.requests[0]",
        ),
        (
            claim("v1beta1", {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}),
            "exactly-before-v1beta2",
            "spec.devices.requests[0].exactly",
        ),
        (
            claim(
                "v1beta1", {"resourceClassName": "c", "devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}}
            ),
            "invalid-resource-class-name",
            "spec.resourceClassName",
        ),
        (
            claim(
                "v1beta1",
                {
                    "devices": {
                        "requests": [
                            {
                                "name": "r",
                                "deviceClassName": "c",
                                "firstAvailable": [{"name": "a", "deviceClassName": "c"}],
                            }
                        ]
                    }
                },
            ),
            "exactly-and-first-available",
            "spec.devices.requests[0]",
        ),
    ],
    ids=[
        "claim-allocationMode",
        "template-allocationMode",
        "constraint-attributes",
        "flat-in-v1",
        "exactly-in-v1beta1",
        "resourceClassName",
        "flat-and-firstAvailable",
    ],
)
def test_invalid_dra_constructs_are_errors_naming_the_field(obj: dict[str, Any], rule: str, path: str) -> None:
    frozen = copy.deepcopy(obj)
    result = convert(obj, cfg("1.34"))
    assert not result.changed and result.object == frozen
    assert error_keys(result) == {(rule, path)}


def test_v135_schema_accepts_converted_templates() -> None:
    result = convert(template("v1beta1", flat_claim_spec()), cfg("1.35"))
    assert schema_errors(converted(result), T135) == ()
