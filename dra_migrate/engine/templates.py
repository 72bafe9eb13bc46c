"""ResourceClaimTemplates for converted device requests (written in the hub form = resource.k8s.io/v1).

One template per (DeviceClass, count, selectors, opaque config): its name carries a hash of exactly
those, so equal requests share a template across workloads and different ones never collide.
"""

from __future__ import annotations

import json
from typing import Any

from dra_migrate.engine.mapping import DeviceRequestSpec
from dra_migrate.engine.memo import cached_by_marshal, cached_when_hashable
from dra_migrate.engine.names import short_hash, to_label

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "dra-migrate"


@cached_when_hashable(maxsize=1024)  # the same few (spec, count) pairs recur in every pod of a cluster
def template_name(spec: DeviceRequestSpec, count: int) -> str:
    digest = short_hash(f"{spec.identity()}|count={count}")
    return f"{to_label(spec.device_class_name, 40)}-{count}-{digest}"


def claim_spec(spec: DeviceRequestSpec, count: int) -> dict[str, Any]:
    """A v1 ResourceClaimSpec asking for `count` devices; defaults are written out so a server copy compares equal."""
    exactly: dict[str, Any] = {
        "deviceClassName": spec.device_class_name,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if spec.selectors:
        exactly["selectors"] = [{"cel": {"expression": expression}} for expression in spec.selectors]
    if spec.capacity:
        exactly["capacity"] = {"requests": dict(spec.capacity)}
    devices: dict[str, Any] = {"requests": [{"name": spec.request_name, "exactly": exactly}]}
    if spec.config:
        devices["config"] = [{"requests": [spec.request_name], "opaque": config.as_dict()} for config in spec.config]
    return {"devices": devices}


def build_template(spec: DeviceRequestSpec, count: int, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": template_name(spec, count)}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {"spec": claim_spec(spec, count)},
    }


def _with_defaults(claim: Any) -> Any:
    """Apply the apiserver's request defaults (docs/dra-api.md section 4: ExactCount, count 1)."""
    if not isinstance(claim, dict):
        return claim
    requests = claim.get("devices", {}).get("requests", [])
    out = {**claim, "devices": {**claim.get("devices", {}), "requests": []}}
    for request in requests:
        request = dict(request)
        if isinstance(request.get("exactly"), dict):
            exactly = dict(request["exactly"])
            exactly.setdefault("allocationMode", "ExactCount")
            if exactly["allocationMode"] == "ExactCount":
                exactly.setdefault("count", 1)
            request["exactly"] = exactly
        out["devices"]["requests"].append(request)
    return out


def spec_key(template: dict[str, Any]) -> str:
    """Canonical text of what a template asks for (request defaults applied): equal keys, same devices.

    Short enough to keep for every template of a cluster instead of the template itself.
    """
    outer = template.get("spec")
    return _claim_spec_key(outer.get("spec") if isinstance(outer, dict) else None)


@cached_by_marshal(maxsize=1024)  # the webhook asks for the key of the same few templates in every review
def _claim_spec_key(claim: Any) -> str:
    return json.dumps(_with_defaults(claim), sort_keys=True, separators=(",", ":"), default=str)


def spec_matches(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    """True when a template read from the cluster asks for the same devices as the desired one."""
    return spec_key(existing) == spec_key(desired)
