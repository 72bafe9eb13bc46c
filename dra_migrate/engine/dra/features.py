"""Fields that appeared in later releases or sit behind off-by-default feature gates (dra-api.md 2.x, 2.7).

A field newer than the target is an error (the object would be rejected or silently cut); a field
whose gate is off by default in the target is a warning (the apiserver silently drops it when off).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dra_migrate.engine.findings import Findings, json_path
from dra_migrate.engine.versions import Target


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    introduced: int  # first 1.x minor whose API has the field
    gate: str | None
    default_on: int | None  # first minor where the gate is on by default; None: not in any known release


FIRST_AVAILABLE = Feature("firstAvailable", 33, "DRAPrioritizedList", 34)
TOLERATIONS = Feature("device tolerations", 33, "DRADeviceTaints", None)
CONSUMABLE_CAPACITY = Feature("consumable capacity", 34, "DRAConsumableCapacity", None)
DISTINCT_ATTRIBUTE = Feature("distinctAttribute", 34, "DRAConsumableCapacity", None)
ADMIN_ACCESS = Feature("adminAccess", 32, "DRAAdminAccess", 34)
EXTENDED_RESOURCE_NAME = Feature("extendedResourceName", 34, "DRAExtendedResource", 36)
PARTITIONABLE = Feature("partitionable devices", 33, "DRAPartitionableDevices", None)
DEVICE_TAINTS = Feature("device taints", 33, "DRADeviceTaints", None)
BINDING_CONDITIONS = Feature("binding conditions", 34, "DRADeviceBindingConditions", None)

Found = tuple[str, Feature]


def _request_features(spec: dict[str, Any], base: tuple[str | int, ...]) -> Iterator[Found]:
    devices = spec.get("devices") or {}
    for index, request in enumerate(devices.get("requests") or []):
        where = (*base, "devices", "requests", index)
        if request.get("firstAvailable"):
            yield json_path(*where, "firstAvailable"), FIRST_AVAILABLE
        bodies = [("exactly", request.get("exactly") or {})]
        bodies += [(f"firstAvailable[{i}]", sub) for i, sub in enumerate(request.get("firstAvailable") or [])]
        for label, body in bodies:
            if body.get("tolerations"):
                yield json_path(*where) + f".{label}.tolerations", TOLERATIONS
            if body.get("capacity"):
                yield json_path(*where) + f".{label}.capacity", CONSUMABLE_CAPACITY
            if body.get("adminAccess"):
                yield json_path(*where) + f".{label}.adminAccess", ADMIN_ACCESS
    for index, constraint in enumerate(devices.get("constraints") or []):
        if constraint.get("distinctAttribute"):
            yield json_path(*base, "devices", "constraints", index, "distinctAttribute"), DISTINCT_ATTRIBUTE


def _slice_features(spec: dict[str, Any]) -> Iterator[Found]:
    for key in ("perDeviceNodeSelection", "sharedCounters"):
        if spec.get(key):
            yield json_path("spec", key), PARTITIONABLE
    for index, device in enumerate(spec.get("devices") or []):
        where = ("spec", "devices", index)
        for key in ("consumesCounters", "nodeName", "nodeSelector", "allNodes"):
            if device.get(key):
                yield json_path(*where, key), PARTITIONABLE
        if device.get("taints"):
            yield json_path(*where, "taints"), DEVICE_TAINTS
        for key in ("bindsToNode", "bindingConditions", "bindingFailureConditions"):
            if device.get(key):
                yield json_path(*where, key), BINDING_CONDITIONS
        if device.get("allowMultipleAllocations") or any(
            isinstance(c, dict) and c.get("requestPolicy") for c in (device.get("capacity") or {}).values()
        ):
            yield json_path(*where), CONSUMABLE_CAPACITY


def features_in(kind: str, hub: dict[str, Any]) -> Iterator[Found]:
    spec = hub.get("spec") or {}
    if kind == "ResourceClaim":
        yield from _request_features(spec, ("spec",))
    elif kind == "ResourceClaimTemplate":
        yield from _request_features(spec.get("spec") or {}, ("spec", "spec"))
    elif kind == "DeviceClass":
        if spec.get("extendedResourceName"):
            yield "spec.extendedResourceName", EXTENDED_RESOURCE_NAME
    elif kind == "ResourceSlice":
        yield from _slice_features(spec)


def check_features(kind: str, hub: dict[str, Any], target: Target, findings: Findings) -> bool:
    """Report target problems; False when the object cannot be expressed for the target."""
    ok = True
    for path, feature in features_in(kind, hub):
        if not target.at_least(feature.introduced):
            findings.error(
                "field-not-in-target",
                path,
                f"{feature.name} needs Kubernetes 1.{feature.introduced} or later; target {target} has no such "
                "field (the object would be rejected or cut); left as is",
            )
            ok = False
        elif feature.gate and (feature.default_on is None or not target.at_least(feature.default_on)):
            findings.warning(
                "feature-gate-off",
                path,
                f"{feature.name} needs feature gate {feature.gate}, off by default in {target}: when it is off the "
                "apiserver silently drops the field",
            )
        if feature is ADMIN_ACCESS:
            label = "resource.kubernetes.io/admin-access" if target.at_least(34) else "resource.k8s.io/admin-access"
            findings.warning("admin-access", path, f'adminAccess needs the namespace label {label}: "true"')
    return ok
