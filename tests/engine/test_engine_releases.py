"""Targets read the generated release table: gates, served versions and fields per release.

The expected facts below are the upstream ones (k8s.io/kubernetes pkg/features/kube_features.go and
pkg/controlplane/instance.go of each release, docs/dra-api.md 1.2-1.4); tests/tools checks that the
table is what the generator reads from those sources.
"""

from __future__ import annotations

import copy
from typing import Any

import corpus
import pytest
from engine_support import converted, corpus_files, errors, findings, load_documents, schema_errors

from dra_migrate.engine import Severity, Target, TargetVersionError, convert, default_config

SUPPORTED = ["1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]


@pytest.mark.parametrize(
    ("gate", "on_from"),
    [
        ("DynamicResourceAllocation", "1.34"),
        ("DRAAdminAccess", "1.34"),
        ("DRAPrioritizedList", "1.34"),
        ("DRAExtendedResource", "1.36"),
        ("DRADeviceTaints", "1.36"),
        ("DRAConsumableCapacity", "1.36"),
        ("DRAPartitionableDevices", "1.36"),
        ("DRADeviceBindingConditions", "1.36"),
        ("DRADeviceTaintRules", "1.37"),
        ("DRAWorkloadResourceClaims", None),
        ("NoSuchGate", None),
    ],
)
def test_feature_gates_are_on_by_default_from_the_upstream_release(gate: str, on_from: str | None) -> None:
    for text in [*SUPPORTED, "1.38"]:
        target = Target.parse(text)
        expected = on_from is not None and target >= Target.parse(on_from)
        assert target.feature_enabled(gate) is expected, f"{gate} in {text}"


def test_gate_stages_come_from_the_table() -> None:
    release = Target.parse("1.37").release
    assert release.modules == ("v1.37.2", "v0.37.2")
    gate = release.gate("DRAExtendedResource")
    assert gate is not None and (gate.stage, gate.default, gate.locked) == ("GA", True, True)
    taint_rules = Target.parse("1.36").release.gate("DRADeviceTaintRules")
    assert taint_rules is not None and (taint_rules.stage, taint_rules.default) == ("Beta", False)
    assert Target.parse("1.34").release.gate("DRADeviceTaintRules") is None


@pytest.mark.parametrize(
    ("text", "version", "on_by_default"),
    [
        ("1.32", "v1beta1", False),  # beta API groups are off by default: --runtime-config
        ("1.33", "v1beta2", False),
        ("1.34", "v1", True),
        ("1.35", "v1", True),
        ("1.36", "v1", True),
        ("1.37", "v1", True),
        ("1.38", "v1", True),
    ],
)
def test_written_version_is_the_most_stable_served_one(text: str, version: str, on_by_default: bool) -> None:
    target = Target.parse(text)
    assert target.dra_version == version
    assert target.release.on_by_default(version, "ResourceClaimTemplate") is on_by_default


def test_served_versions_per_release() -> None:
    assert Target.parse("1.32").release.served_versions("DeviceClass") == ("v1beta1", "v1alpha3")
    assert Target.parse("1.34").release.served_versions("DeviceClass") == ("v1", "v1beta2", "v1beta1")
    assert Target.parse("1.37").release.served_versions("DeviceTaintRule") == ("v1", "v1beta2", "v1alpha3")
    assert Target.parse("1.38").release.served_versions("DeviceClass") == ("v1", "v1beta2")


def test_quota_charges_extended_resource_names_where_the_gate_is_on() -> None:
    charged = {text: Target.parse(text).release.quota_charges_extended_resource for text in SUPPORTED}
    assert charged == {"1.32": False, "1.33": False, "1.34": False, "1.35": False, "1.36": True, "1.37": True}


# --- targets past the table ---------------------------------------------------------------------------------


def test_138_is_137_without_v1beta1_and_says_so() -> None:
    target = Target.parse("1.38")
    assert target.release.projected and target.release.source == "1.37"
    assert not target.release.serves("v1beta1", "ResourceClaim")
    assert target.release.serves("v1beta2", "ResourceClaim")
    assert target.notice is not None and "resource.k8s.io/v1beta1" in target.notice and "1.37" in target.notice
    assert Target.parse("1.37").notice is None


@pytest.mark.parametrize("text", ["1.38", "1.39", "1.50"])
def test_later_targets_convert_without_internal_errors(text: str) -> None:
    original = claim_template("v1beta1", {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2})
    result = convert(original, default_config(text))
    assert not errors(result) and converted(result)["apiVersion"] == "resource.k8s.io/v1"
    assert Target.parse(text).notice is not None


@pytest.mark.parametrize("text", ["2.0", "0.9", "1.31"])
def test_targets_outside_kubernetes_1_32_on_are_clear_errors(text: str) -> None:
    with pytest.raises(TargetVersionError):
        Target.parse(text)


# --- gate warnings follow the table -------------------------------------------------------------------------


def claim_template(version: str, request: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


TOLERATIONS_AND_CAPACITY = {
    "name": "gpu",
    "exactly": {
        "deviceClassName": "gpu.example.com",
        "tolerations": [{"key": "example.com/maintenance", "operator": "Exists"}],
        "capacity": {"requests": {"memory": "10Gi"}},
    },
}


@pytest.mark.parametrize(
    ("text", "gates_off"),
    [
        ("1.34", {"DRADeviceTaints", "DRAConsumableCapacity"}),
        ("1.35", {"DRADeviceTaints", "DRAConsumableCapacity"}),
        ("1.36", set()),
        ("1.37", set()),  # DRADeviceTaints GA, DRAConsumableCapacity beta and on
        ("1.38", set()),
    ],
)
def test_gate_warnings_match_the_upstream_defaults(text: str, gates_off: set[str]) -> None:
    result = convert(claim_template("v1", copy.deepcopy(TOLERATIONS_AND_CAPACITY)), default_config(text))
    warned = {f.message.split(" needs feature gate ")[1].split(" ")[0] for f in findings(result, "feature-gate-off")}
    assert warned == gates_off
    assert not errors(result)


def test_capacity_is_newer_than_133_and_named_where_the_input_has_it() -> None:
    original = claim_template("v1", copy.deepcopy(TOLERATIONS_AND_CAPACITY))
    result = convert(original, default_config("1.33"))
    assert not result.changed and result.object == original
    (error,) = errors(result)
    assert (error.rule, error.path) == ("field-not-in-target", "spec.spec.devices.requests[0].exactly.capacity")
    assert "1.34" in error.message


def test_a_field_missing_in_a_flat_target_is_named_in_the_input_shape() -> None:
    """v1beta1 (1.32) keeps request fields on the request; the error names the v1 input's `exactly` field."""
    request = {"name": "gpu", "exactly": {"deviceClassName": "c", "capacity": {"requests": {"memory": "1Gi"}}}}
    result = convert(claim_template("v1", request), default_config("1.32"))
    assert [(f.rule, f.path) for f in errors(result)] == [
        ("field-not-in-target", "spec.spec.devices.requests[0].exactly.capacity")
    ]


def test_admin_access_needs_a_namespace_label_only_where_the_release_has_one() -> None:
    request = {"name": "r", "exactly": {"deviceClassName": "c", "adminAccess": True}}
    labels: dict[str, list[str]] = {}
    for text in ("1.32", "1.33", "1.34"):
        result = convert(claim_template("v1", copy.deepcopy(request)), default_config(text))
        labels[text] = [f.message for f in findings(result, "admin-access", Severity.WARNING)]
    assert labels["1.32"] == []  # 1.32 has no DRAAdminNamespaceLabelKey
    assert "resource.k8s.io/admin-access" in labels["1.33"][0]
    assert "resource.kubernetes.io/admin-access" in labels["1.34"][0]


def test_dynamic_resource_allocation_gate_warning_on_pods_follows_the_table() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    warned = {
        text: bool(findings(convert(copy.deepcopy(pod), default_config(text)), "dra-gate-off")) for text in SUPPORTED
    }
    assert warned == {"1.32": True, "1.33": True, "1.34": False, "1.35": False, "1.36": False, "1.37": False}


@pytest.mark.parametrize("text", SUPPORTED)
def test_converted_templates_are_valid_for_every_supported_release(text: str) -> None:
    request = {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}
    result = convert(claim_template("v1beta1", request), default_config(text))
    assert not errors(result)
    assert schema_errors(converted(result), Target.parse(text)) == ()


# --- the table against an independent source: each release's OpenAPI schema ---------------------------------

# Kept as it is (served), with a `status` newer than 1.33/1.34's schema (see test_engine_corpus STATUS_KEPT).
_STATUS_KEPT = "resource.k8s.io.v1alpha3.DeviceTaintRule.yaml"


def corpus_dra_documents() -> list[tuple[str, int, dict[str, Any]]]:
    corpus.require("dra-versions")
    return [
        (path.name, index, doc)
        for path in corpus_files("dra-versions")
        for index, doc in enumerate(load_documents(path))
        if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("resource.k8s.io/")
    ]


@pytest.mark.parametrize("text", [*SUPPORTED, "1.38"])
def test_every_corpus_dra_object_fits_the_target_or_is_refused(text: str) -> None:
    """Converted objects pass the target's strict schema (kubernetes-validate, built from each release's
    OpenAPI: a source independent of the generated table); the rest are refused with an error, left as is."""
    config, target = default_config(text), Target.parse(text)
    written = refused = 0
    for name, index, doc in corpus_dra_documents():
        original = copy.deepcopy(doc)
        result = convert(doc, config)
        if errors(result):
            assert not result.changed and result.object == original, (name, index)
            refused += 1
        elif result.object is not None and name != _STATUS_KEPT:
            assert schema_errors(converted(result), target) == (), (name, index)
            written += 1
    assert written > 50, (written, refused)
