"""Whether an object of a snapshot has the shape an API server gives it: a hand-edited snapshot may
hold `status: "x"` or `containers: 7`, which no server returns and the planner's reads assume away.

Built-in kinds are checked against the release's OpenAPI schema (kubernetes-validate's, types only:
fields a newer release adds are allowed, and a missing required field is no problem for a plan, as in
a snapshot written by hand); the other kinds the plan reads (the GPU Operator's, Kueue's)
have no schema here, so their top-level sections are checked, and the fields the plan reads of them.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine import Target

_SECTIONS = ("metadata", "spec", "status", "data")


def shape_problem(obj: dict[str, Any], target: Target) -> str | None:
    """The first field that has a wrong type (`field: what is wrong`), or None."""
    for field in ("apiVersion", "kind"):
        if not isinstance(obj.get(field, ""), str):
            return f"{field}: {_kind_of(obj[field])}, not a string"
    for section in _SECTIONS:
        if section in obj and obj[section] is not None and not isinstance(obj[section], dict):
            return f"{section}: {_kind_of(obj[section])}, not a mapping"
    if obj.get("kind") == "ClusterQueue":
        return _cluster_queue_problem(obj.get("spec") or {})
    if obj.get("kind") in _OPERATOR_FIELDS:
        return _fields_problem(obj, _OPERATOR_FIELDS[str(obj["kind"])])
    if not obj.get("kind") or not obj.get("apiVersion"):
        return None
    from dra_migrate.manifests.schema import first_type_error  # the schemas load only for a snapshot

    return first_type_error(obj, target)


def _kind_of(value: Any) -> str:
    return {list: "a list", dict: "a mapping", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


# The fields the plan reads of the device operators' objects, with their types (the operators' CRDs:
# NVIDIA/gpu-operator api/nvidia/v1 ClusterPolicySpec, ROCm/gpu-operator DeviceConfigSpec, Intel's
# GpuDevicePluginSpec).
_OPERATOR_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "ClusterPolicy": (
        ("spec.devicePlugin", dict),
        ("spec.devicePlugin.enabled", bool),
        ("spec.devicePlugin.config", dict),
        ("spec.devicePlugin.config.name", str),
        ("spec.devicePlugin.config.default", str),
        ("spec.mig", dict),
        ("spec.mig.strategy", str),
        ("status.namespace", str),
    ),
    "DeviceConfig": (
        ("spec.selector", dict),
        ("spec.devicePlugin", dict),
        ("spec.devicePlugin.devicePluginArguments", dict),
    ),
    "GpuDevicePlugin": (("spec.nodeSelector", dict), ("spec.sharedDevNum", int)),
}
_TYPE_NAMES = {dict: "a mapping", bool: "true or false", str: "a string", int: "an integer"}


def _fields_problem(obj: dict[str, Any], fields: tuple[tuple[str, type], ...]) -> str | None:
    for path, wanted in fields:
        value: Any = obj
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        wrong = isinstance(value, bool) and wanted is int
        if value is not None and (wrong or not isinstance(value, wanted)):
            return f"{path}: {_kind_of(value)}, not {_TYPE_NAMES[wanted]}"
    return None


def _cluster_queue_problem(spec: dict[str, Any]) -> str | None:
    """Kueue's `spec.resourceGroups[].coveredResources[]`: the names a queue charges for."""
    groups = spec.get("resourceGroups") or []
    if not isinstance(groups, list):
        return f"spec.resourceGroups: {_kind_of(groups)}, not a list"
    for i, group in enumerate(groups):
        if not isinstance(group, dict):
            return f"spec.resourceGroups.{i}: {_kind_of(group)}, not a mapping"
        covered = group.get("coveredResources") or []
        if not isinstance(covered, list) or not all(isinstance(name, str) for name in covered):
            return f"spec.resourceGroups.{i}.coveredResources: not a list of resource names"
    return None
