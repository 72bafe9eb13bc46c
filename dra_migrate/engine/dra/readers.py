"""Version -> hub (v1 shape). Each reader returns None after an error finding when no faithful
object exists (classic DRA, docs/dra-api.md section 2.7)."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine import releases
from dra_migrate.engine.dra.fit import fields_of
from dra_migrate.engine.dra.unset import is_set
from dra_migrate.engine.findings import Findings, json_path
from dra_migrate.engine.plain import plain_copy

# The fields a flat (v1alpha3/v1beta1) request moves under `exactly`: those of the hub's ExactDeviceRequest.
REQUEST_FIELDS = tuple(fields_of("ExactDeviceRequest"))


def _list_attributes() -> str:
    """When structured parameters got list attributes again (1.30's intSlice/stringSlice had none after)."""
    since = releases.first_with_field("v1", "DeviceAttribute", "ints", 0)
    if since is None:
        return "no known Kubernetes release has list attributes"
    gates = fields_of("DeviceAttribute")["ints"].gates
    return f"list attributes (ints, strings) exist only from Kubernetes 1.{since}" + (
        f", behind feature gate {', '.join(gates)}" if gates else ""
    )


_LIST_ATTRIBUTES = _list_attributes()


def _strip_status(obj: dict[str, Any]) -> dict[str, Any]:
    out = plain_copy(obj)
    out.pop("status", None)
    return out


def _classic_error(findings: Findings, path: str, what: str) -> None:
    findings.error(
        "classic-dra",
        path,
        f"{what} belongs to classic DRA (removed in Kubernetes 1.32) and has no automatic equivalent: "
        "write a DeviceClass with CEL selectors and opaque config for a structured-parameters driver by hand",
    )


# --- ResourceClass / DeviceClass --------------------------------------------------------------


def device_class_from_v1alpha2(obj: dict[str, Any], findings: Findings) -> dict[str, Any] | None:
    """ResourceClass (no spec, fields at top level) -> DeviceClass (docs/dra-api.md 2.1)."""
    if is_set(obj.get("parametersRef")):
        _classic_error(findings, "parametersRef", "ResourceClass.parametersRef (vendor class parameters)")
        return None
    driver = obj.get("driverName")
    if not isinstance(driver, str) or not driver:
        findings.error(
            "resource-class-without-driver", "driverName", "ResourceClass without driverName cannot be converted"
        )
        return None
    findings.warning(
        "driver-name-to-selector",
        "driverName",
        f'driverName {driver!r} -> CEL selector device.driver == "{driver}": only right if the driver '
        "publishes ResourceSlices under that name",
    )
    if is_set(obj.get("suitableNodes")):
        findings.warning(
            "suitable-nodes-dropped",
            "suitableNodes",
            "suitableNodes dropped: node placement now comes from the driver's ResourceSlices",
        )
    metadata = plain_copy(obj.get("metadata", {}))
    return {
        "kind": "DeviceClass",
        "metadata": metadata,
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def device_class_from_structured(obj: dict[str, Any], findings: Findings) -> dict[str, Any]:
    out = _strip_status(obj)
    spec = out.get("spec")
    suitable_nodes = spec.pop("suitableNodes", None) if isinstance(spec, dict) else None
    if is_set(suitable_nodes):
        findings.warning("suitable-nodes-dropped", "spec.suitableNodes", "suitableNodes (classic DRA, 1.31) dropped")
    return out


# --- ResourceClaim(Template) specs ------------------------------------------------------------


def claim_spec_from_v1alpha2(spec: dict[str, Any], base: tuple[str, ...], findings: Findings) -> dict[str, Any] | None:
    """`resourceClassName` (+ allocationMode) -> one device request (docs/dra-api.md 2.2)."""
    if is_set(spec.get("parametersRef")):
        ref = spec["parametersRef"]
        kind = ref.get("kind") if isinstance(ref, dict) else None
        _classic_error(findings, json_path(*base, "parametersRef"), f"parametersRef to {kind or 'a vendor object'}")
        return None
    class_name = spec.get("resourceClassName")
    if not isinstance(class_name, str) or not class_name:
        findings.error(
            "resource-class-name-missing", json_path(*base, "resourceClassName"), "resourceClassName is required"
        )
        return None
    if spec.get("allocationMode") == "Immediate":
        findings.warning(
            "immediate-allocation-dropped",
            json_path(*base, "allocationMode"),
            "allocationMode Immediate has no equivalent since 1.31: devices are now allocated when the first "
            "pod using the claim is scheduled",
        )
    findings.info(
        "class-to-device-request",
        json_path(*base, "resourceClassName"),
        f"resourceClassName {class_name!r} -> devices.requests[0] (req-0) of DeviceClass {class_name!r}",
    )
    return {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": class_name}}]}}


def claim_spec_from_flat(spec: dict[str, Any], base: tuple[str, ...], findings: Findings) -> dict[str, Any] | None:
    """v1alpha3/v1beta1 request fields -> `exactly` (mirrors Convert_v1beta1_DeviceRequest_To_resource)."""
    if is_set(spec.get("controller")):
        _classic_error(findings, json_path(*base, "controller"), "spec.controller")
        return None
    out = plain_copy(spec)
    requests = (out.get("devices") or {}).get("requests") or []
    for index, request in enumerate(requests):
        if not isinstance(request, dict):
            continue
        # Unset values ("", null, false, 0, [], {}) are how the apiserver writes absent fields:
        # `deviceClassName: ""` beside firstAvailable is a request without device fields.
        popped = {k: request.pop(k) for k in REQUEST_FIELDS if k in request}
        flat = {k: v for k, v in popped.items() if is_set(v)}
        if not is_set(request.get("exactly")):
            request.pop("exactly", None)
        if not is_set(request.get("firstAvailable")):
            request.pop("firstAvailable", None)
        if flat and "firstAvailable" in request:
            findings.error(
                "exactly-and-first-available",
                json_path(*base, "devices", "requests", index),
                "a request sets both its own device fields and firstAvailable; v1 needs exactly one of "
                "exactly or firstAvailable",
            )
            return None
        if flat:
            request["exactly"] = flat
    return out


def claim_spec_from_hub_shaped(spec: dict[str, Any]) -> dict[str, Any]:
    return plain_copy(spec)


# --- ResourceSlice ----------------------------------------------------------------------------


def slice_from_v1alpha2(obj: dict[str, Any], findings: Findings) -> dict[str, Any] | None:
    """1.30 named-resources slice -> v1 devices (docs/dra-api.md 2.4 mappings)."""
    named = (obj.get("namedResources") or {}).get("instances")
    if not isinstance(named, list):
        findings.error("slice-not-named-resources", "namedResources", "only namedResources slices can be converted")
        return None
    node = obj.get("nodeName") or ""
    devices = []
    for index, instance in enumerate(named):
        attributes: dict[str, Any] = {}
        capacity: dict[str, Any] = {}
        for attr in instance.get("attributes") or []:
            name = attr.get("name")
            for typ in ("int", "bool", "string", "version"):
                if typ in attr:
                    attributes[name] = {typ: attr[typ]}
            if "quantity" in attr:
                capacity[name] = {"value": attr["quantity"]}
                findings.warning(
                    "quantity-attribute-to-capacity",
                    json_path("namedResources", "instances", index, "attributes"),
                    f"quantity attribute {name!r} -> capacity: CEL selectors must use device.capacity",
                )
            for typ in ("intSlice", "stringSlice"):
                if typ in attr:
                    findings.warning(
                        "slice-attribute-dropped",
                        json_path("namedResources", "instances", index, "attributes"),
                        f"{typ} attribute {name!r} dropped: {_LIST_ATTRIBUTES}",
                    )
        device: dict[str, Any] = {"name": instance.get("name")}
        if attributes:
            device["attributes"] = attributes
        if capacity:
            device["capacity"] = capacity
        devices.append(device)
    spec: dict[str, Any] = {
        "driver": obj.get("driverName"),
        "pool": {"name": node or "pool", "generation": 0, "resourceSliceCount": 1},
    }
    if node:
        spec["nodeName"] = node
    spec["devices"] = devices
    return {"kind": "ResourceSlice", "metadata": plain_copy(obj.get("metadata", {})), "spec": spec}


def slice_from_basic(obj: dict[str, Any], plain_capacity: bool) -> dict[str, Any]:
    """v1alpha3/v1beta1: unwrap `basic`, capacity X -> {value: X} (v1alpha3), drop empty nodeName/allNodes."""
    out = _strip_status(obj)
    spec = out.get("spec") or {}
    for device in spec.get("devices") or []:
        basic = device.pop("basic", None) or {}
        if plain_capacity and isinstance(basic.get("capacity"), dict):
            basic["capacity"] = {k: {"value": v} for k, v in basic["capacity"].items()}
        device.update(basic)
    if spec.get("nodeName") == "":
        del spec["nodeName"]
    if spec.get("allNodes") is False:
        del spec["allNodes"]
    return out
