"""Properties over generated pods and claim templates (hypothesis).

Pods: random init / sidecar / app containers, counts 0..8 written as int, "N" or "N000m", a random mix of
nvidia.com/gpu, MIG profiles, amd.com/gpu and cpu/memory, random pre-existing claims (some with the names
the engine would pick) and an optional nodeName.
"""

from __future__ import annotations

import copy
from typing import Any

from engine_support import (
    DNS_LABEL,
    RESOURCE_KEYS,
    T132,
    T133,
    T134,
    all_pod_claim_names,
    check_invariant,
    converted,
    errors,
    iter_containers,
    parse_count,
    schema_errors,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_migrate.engine import DeviceRequestSpec, convert, default_config

CONFIG_134 = default_config("1.34")
CONFIG_133 = default_config("1.33")
CONFIG_132 = default_config("1.32")

DEVICE_NAMES = tuple(RESOURCE_KEYS)
EXISTING_NAMES = ("a0-gpu", "a0-mig", "a1-gpu", "i0-gpu", "s0-gpu", "a0-gpu-2", "shared")
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def quantity(count: int) -> st.SearchStrategy[Any]:
    return st.sampled_from([count, str(count), f"{count * 1000}m"])


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(DEVICE_NAMES), unique=True, max_size=3)):
        count = draw(st.integers(0, 8))
        limits[name] = draw(quantity(count))
        if draw(st.booleans()):
            requests[name] = draw(quantity(count))
    if draw(st.booleans()):
        limits["cpu"] = "1"
        requests["cpu"] = "500m"
    if draw(st.booleans()):
        limits["memory"] = "1Gi"
    out: dict[str, Any] = {}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    existing = draw(st.lists(st.sampled_from(EXISTING_NAMES), unique=True, max_size=3))
    pod_claims = [
        {
            "name": name,
            **draw(st.sampled_from([{"resourceClaimName": "shared-claim"}, {"resourceClaimTemplateName": "existing"}])),
        }
        for name in existing
    ]

    def make(name: str, sidecar: bool) -> dict[str, Any]:
        item: dict[str, Any] = {"name": name, "image": "registry.example/app:1"}
        body = draw(resources())
        uses = draw(st.lists(st.sampled_from(existing), unique=True)) if existing else []
        if uses:
            body["claims"] = [{"name": n} for n in uses]
        if body:
            item["resources"] = body
        if sidecar:
            item["restartPolicy"] = "Always"
        return item

    init = []
    sidecars = 0
    for index in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            init.append(make(f"s{sidecars}", True))
            sidecars += 1
        else:
            init.append(make(f"i{index}", False))
    spec: dict[str, Any] = {"containers": [make(f"a{i}", False) for i in range(draw(st.integers(1, 3)))]}
    if init:
        spec["initContainers"] = init
    if pod_claims:
        spec["resourceClaims"] = pod_claims
    if draw(st.booleans()):
        spec["nodeName"] = "node-1"
        if draw(st.booleans()):
            spec["nodeSelector"] = {"disk": "ssd"}
    metadata: dict[str, Any] = {"name": "generated"}
    if draw(st.booleans()):
        metadata["namespace"] = "team"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def device_requests_left(pod_spec: dict[str, Any]) -> list[tuple[str, int, str]]:
    left = []
    for kind, index, item in iter_containers(pod_spec):
        for section in ("limits", "requests"):
            for name, value in ((item.get("resources") or {}).get(section) or {}).items():
                if name in RESOURCE_KEYS and parse_count(value):
                    left.append((kind, index, name))
    return left


@SETTINGS
@given(pods())
def test_conversion_is_idempotent(original: dict[str, Any]) -> None:
    first = convert(copy.deepcopy(original), CONFIG_134)
    assert not errors(first)
    again = convert(copy.deepcopy(converted(first)), CONFIG_134)
    assert not again.changed
    assert again.object == first.object
    assert again.templates == []
    assert not errors(again)


@SETTINGS
@given(pods())
def test_no_device_is_lost_or_gained(original: dict[str, Any]) -> None:
    result = convert(copy.deepcopy(original), CONFIG_134)
    assert result.object is not None
    after = converted(result)["spec"]
    assert device_requests_left(after) == []
    check_invariant(original["spec"], after, result.templates, DEVICE_NAMES)
    # Pre-existing claims and their users are kept as they were.
    assert after.get("resourceClaims", [])[: len(original["spec"].get("resourceClaims", []))] == original["spec"].get(
        "resourceClaims", []
    )
    for (_, _, before), (_, _, now) in zip(iter_containers(original["spec"]), iter_containers(after), strict=True):
        old = [c["name"] for c in (before.get("resources") or {}).get("claims", [])]
        new = [c["name"] for c in (now.get("resources") or {}).get("claims", [])]
        assert new[: len(old)] == old


@SETTINGS
@given(pods())
def test_conversions_list_every_request_that_became_claims(original: dict[str, Any]) -> None:
    """`result.conversions` is what the webhook reports and checks instead of walking the pod again."""
    result = convert(copy.deepcopy(original), CONFIG_134)
    after = converted(result)["spec"]
    expected: dict[tuple[str, str], int] = {}
    added_claims: dict[str, set[str]] = {}
    for (kind, index, before), (_, _, now) in zip(
        iter_containers(original["spec"]), iter_containers(after), strict=True
    ):
        path = f"spec.{kind}[{index}].resources"
        limits = (before.get("resources") or {}).get("limits") or {}
        for name in set(limits) & set(DEVICE_NAMES):
            if parse_count(limits[name]):
                expected[(path, name)] = parse_count(limits[name])
        old = {c["name"] for c in (before.get("resources") or {}).get("claims", [])}
        added_claims[path] = {c["name"] for c in (now.get("resources") or {}).get("claims", [])} - old
    assert {(c.path, c.resource): c.count for c in result.conversions} == expected
    assert len(result.conversions) == len(expected)
    for path, added in added_claims.items():
        assert {name for c in result.conversions if c.path == path for name in c.claims} == added
    for conversion in result.conversions:
        spec = CONFIG_134.mappings.resolve(conversion.resource)
        assert isinstance(spec, DeviceRequestSpec) and conversion.device_class_name == spec.device_class_name
    assert result.converted_resources == sorted({resource for _, resource in expected})


@SETTINGS
@given(pods())
def test_output_is_valid_for_134(original: dict[str, Any]) -> None:
    assert schema_errors(original) == ()
    result = convert(copy.deepcopy(original), CONFIG_134)
    assert result.object is not None
    assert schema_errors(converted(result)) == ()
    for template in result.templates:
        assert template["apiVersion"] == "resource.k8s.io/v1"
        assert schema_errors(template) == ()
        assert template["metadata"].get("namespace") == original["metadata"].get("namespace")


@SETTINGS
@given(pods())
def test_claim_names_are_unique_dns_labels(original: dict[str, Any]) -> None:
    result = convert(copy.deepcopy(original), CONFIG_134)
    assert result.object is not None
    names = all_pod_claim_names(converted(result)["spec"])
    assert len(names) == len(set(names))
    for name in names:
        assert isinstance(name, str) and len(name) <= 63 and DNS_LABEL.match(name), name
    declared = set(names)
    for _, _, item in iter_containers(converted(result)["spec"]):
        for claim in (item.get("resources") or {}).get("claims", []):
            assert claim["name"] in declared


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods(), st.sampled_from([(CONFIG_132, T132), (CONFIG_133, T133)]))
def test_output_is_valid_for_the_beta_targets(original: dict[str, Any], target: Any) -> None:
    config, version = target
    result = convert(copy.deepcopy(original), config)
    assert result.object is not None and not errors(result)
    assert schema_errors(converted(result), version) == ()
    for template in result.templates:
        assert template["apiVersion"] == config.target.dra_api_version
        assert schema_errors(template, version) == ()


# --- resource.k8s.io round trip -------------------------------------------------------------------------

REQUEST_NAMES = ("gpu", "gpus", "nic", "r-0", "accel")
CLASSES = ("gpu.example.com", "gpu.nvidia.com", "mig.nvidia.com", "nic.example.com")
SELECTORS = (
    'device.driver == "gpu.example.com"',
    'device.attributes["gpu.example.com"].model == "A100"',
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("10Gi")) >= 0',
)
PARAMETERS = st.dictionaries(
    st.sampled_from(["apiVersion", "kind", "sharing", "replicas"]),
    st.one_of(st.text(alphabet="abcXYZ-/.", max_size=6), st.integers(0, 9), st.booleans()),
    max_size=3,
)


@st.composite
def v1_claim_objects(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(REQUEST_NAMES), min_size=1, max_size=3, unique=True))
    requests = []
    for name in names:
        exactly: dict[str, Any] = {"deviceClassName": draw(st.sampled_from(CLASSES))}
        chosen = draw(st.lists(st.sampled_from(SELECTORS), unique=True, max_size=2))
        if chosen:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in chosen]
        mode = draw(st.sampled_from([None, "ExactCount", "All"]))
        if mode:
            exactly["allocationMode"] = mode
        if mode != "All" and draw(st.booleans()):
            exactly["count"] = draw(st.integers(1, 32))
        admin = draw(st.sampled_from([None, True, False]))
        if admin is not None:
            exactly["adminAccess"] = admin
        requests.append({"name": name, "exactly": exactly})
    devices: dict[str, Any] = {"requests": requests}
    if draw(st.booleans()):
        devices["constraints"] = [
            {
                "requests": draw(st.lists(st.sampled_from(names), min_size=1, unique=True)),
                "matchAttribute": "gpu.example.com/model",
            }
        ]
    if draw(st.booleans()):
        devices["config"] = [
            {
                "requests": draw(st.lists(st.sampled_from(names), min_size=1, unique=True)),
                "opaque": {"driver": "gpu.example.com", "parameters": draw(PARAMETERS)},
            }
        ]
    metadata: dict[str, Any] = {"name": draw(st.sampled_from(["t", "gpu-template", "a.b"]))}
    if draw(st.booleans()):
        metadata["namespace"] = "team"
    claim_spec = {"devices": devices}
    if draw(st.booleans()):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata, "spec": claim_spec}
    spec: dict[str, Any] = {"spec": claim_spec}
    if draw(st.booleans()):
        spec["metadata"] = {"labels": {"app": "x"}, "annotations": {"note": "y"}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": metadata, "spec": spec}


def without_default_admin_access(obj: dict[str, Any]) -> dict[str, Any]:
    """`adminAccess: false` is the default; v1beta1 readers omit it (docs/dra-api.md 2.2)."""
    out = copy.deepcopy(obj)
    spec = out["spec"]["spec"] if out["kind"] == "ResourceClaimTemplate" else out["spec"]
    for request in spec["devices"]["requests"]:
        if request["exactly"].get("adminAccess") is False:
            del request["exactly"]["adminAccess"]
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v1_claim_objects())
def test_v1_to_132_and_back_is_lossless(original: dict[str, Any]) -> None:
    assert schema_errors(original, T134) == ()
    down = convert(copy.deepcopy(original), CONFIG_132)
    assert down.changed and not errors(down)
    assert down.object is not None and converted(down)["apiVersion"] == "resource.k8s.io/v1beta1"
    assert schema_errors(converted(down), T132) == ()
    up = convert(copy.deepcopy(converted(down)), CONFIG_134)
    assert up.changed and not errors(up)
    assert up.object == without_default_admin_access(original)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v1_claim_objects())
def test_v1_to_133_and_back_is_exact(original: dict[str, Any]) -> None:
    down = convert(copy.deepcopy(original), CONFIG_133)
    assert down.object is not None and converted(down)["apiVersion"] == "resource.k8s.io/v1beta2"
    assert schema_errors(converted(down), T133) == ()
    up = convert(copy.deepcopy(converted(down)), CONFIG_134)
    assert up.object == original
