"""Fields set to "", null, [], {}, false or 0 are unset to Kubernetes, and so to the converter.

The apiserver writes such values itself (`kubectl get -o yaml` of a v1beta1 claim with firstAvailable
shows `deviceClassName: ""`), and strict decoding rejects a field the target's type lacks whatever
its value, so empty fields newer than the target are dropped rather than carried along.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_support import T132, T133, T134, converted, errors, findings, schema_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_migrate.engine import Severity, Target, convert, default_config

EMPTY_VALUES: list[Any] = ["", None, [], {}, False, 0]
SUBREQUESTS = [
    {"name": "big", "deviceClassName": "gpu.example.com", "count": 2},
    {"name": "small", "deviceClassName": "gpu.example.com"},
]


def claim(version: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": requests}},
    }


def v1_first_available_claim() -> dict[str, Any]:
    return claim("v1", [{"name": "gpu", "firstAvailable": copy.deepcopy(SUBREQUESTS)}])


def test_a_v1beta1_claim_as_the_apiserver_writes_it_converts() -> None:
    """kubectl get -o yaml: DeviceRequest.deviceClassName has no omitempty, so it is "" next to firstAvailable."""
    written_by_apiserver = claim(
        "v1beta1", [{"name": "gpu", "deviceClassName": "", "firstAvailable": copy.deepcopy(SUBREQUESTS)}]
    )
    result = convert(written_by_apiserver, default_config("1.34"))
    assert not errors(result)
    assert result.changed and result.object == v1_first_available_claim()
    assert schema_errors(converted(result), T134) == ()


FLAT_FIELDS = ["deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FLAT_FIELDS), st.sampled_from(EMPTY_VALUES), max_size=len(FLAT_FIELDS)))
def test_empty_flat_fields_beside_first_available_are_unset(empties: dict[str, Any]) -> None:
    request = {"name": "gpu", **copy.deepcopy(empties), "firstAvailable": copy.deepcopy(SUBREQUESTS)}
    result = convert(claim("v1beta1", [request]), default_config("1.34"))
    assert not errors(result), result.findings
    assert result.object == v1_first_available_claim()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EMPTY_VALUES), st.sampled_from(["1.33", "1.34", "1.37"]))
def test_an_empty_exactly_beside_first_available_is_unset(empty: Any, target: str) -> None:
    original = claim("v1", [{"name": "gpu", "exactly": empty, "firstAvailable": copy.deepcopy(SUBREQUESTS)}])
    result = convert(original, default_config(target))
    assert not findings(result, "exactly-or-first-available"), result.findings
    assert not errors(result)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EMPTY_VALUES))
def test_an_empty_first_available_beside_exactly_is_unset(empty: Any) -> None:
    original = claim("v1", [{"name": "gpu", "exactly": {"deviceClassName": "c"}, "firstAvailable": empty}])
    result = convert(original, default_config("1.32"))
    assert not errors(result), result.findings
    assert converted(result)["spec"] == {"devices": {"requests": [{"name": "gpu", "deviceClassName": "c"}]}}
    assert schema_errors(converted(result), T132) == ()


@pytest.mark.parametrize("empty", EMPTY_VALUES, ids=repr)
def test_empty_values_are_not_invalid_constructs(empty: Any) -> None:
    original = claim("v1beta1", [{"name": "r", "deviceClassName": "c", "exactly": copy.deepcopy(empty)}])
    original["spec"] |= {"allocationMode": copy.deepcopy(empty), "resourceClassName": copy.deepcopy(empty)}
    original["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.example.com/model", "attributes": empty}]
    result = convert(original, default_config("1.34"))
    assert not errors(result), result.findings


# --- empty fields newer than the target ---------------------------------------------------------------------


def v1_slice(**device_fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpu"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "A100"}}, **device_fields}],
        },
    }


NEWER_EMPTY: dict[str, Any] = {
    "bindsToNode": False,
    "allowMultipleAllocations": False,
    "taints": None,
    "bindingConditions": [],
}


@pytest.mark.parametrize(
    ("target", "version", "kept"),
    [(T132, "v1beta1", set()), (T133, "v1beta2", {"taints"})],  # device taints are in 1.33 (alpha)
)
def test_empty_fields_newer_than_the_target_are_dropped(target: Target, version: str, kept: set[str]) -> None:
    result = convert(v1_slice(**NEWER_EMPTY), default_config(str(target)))
    assert not errors(result), result.findings
    out = converted(result)
    assert out["apiVersion"] == f"resource.k8s.io/{version}"
    device = out["spec"]["devices"][0]
    fields = device.get("basic", device)
    assert set(NEWER_EMPTY) & set(fields) == kept, fields
    assert schema_errors(out, target) == ()  # strict: an unknown field fails whatever its value


def test_set_fields_newer_than_the_target_stay_errors() -> None:
    original = v1_slice(bindsToNode=True)
    result = convert(original, default_config("1.33"))
    assert not result.changed and result.object == original
    assert [(f.rule, f.path) for f in errors(result)] == [("field-not-in-target", "spec.devices[0].bindsToNode")]
    assert "1.34" in errors(result)[0].message  # where the field first appears


def test_an_object_already_in_the_target_version_only_loses_its_empty_newer_fields() -> None:
    original = v1_slice(**NEWER_EMPTY)
    original["apiVersion"] = "resource.k8s.io/v1beta2"
    result = convert(original, default_config("1.33"))
    assert result.changed and not errors(result)
    assert converted(result) == v1_slice(taints=None) | {"apiVersion": "resource.k8s.io/v1beta2"}


def test_empty_gated_fields_give_no_gate_warning() -> None:
    result = convert(v1_slice(**NEWER_EMPTY), default_config("1.34"))
    assert not result.changed and not findings(result, severity=Severity.WARNING)
