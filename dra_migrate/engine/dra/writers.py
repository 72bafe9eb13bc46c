"""Hub (v1 shape) -> the version the target serves, and JSON paths between the two shapes.

Two shapes exist: the hub's, where a request keeps its device fields under `exactly` and a slice's
devices hold theirs directly, and the flat one of v1alpha3/v1beta1 (request fields on the request,
device fields under `basic`). Which one a version has is read from its types in the release table.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.findings import PathParts
from dra_migrate.engine.plain import plain_copy
from dra_migrate.engine.releases import Release
from dra_migrate.engine.versions import RESOURCE_GROUP, Target

CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")

_DEVICE_NAME = "name"
_REQUEST_OWN = frozenset({"name", "exactly", "firstAvailable"})  # request fields outside `exactly`
_FLAT_READ_VERSIONS = ("v1alpha3", "v1beta1")  # the versions the readers take as flat


def flat_requests(release: Release, version: str) -> bool:
    """Whether `version` keeps request fields on the request (no `exactly` wrapper) in `release`."""
    types = release.types(version)
    request = types.struct("DeviceRequest") if types else None
    return request is not None and "exactly" not in request


def basic_devices(release: Release, version: str) -> bool:
    """Whether `version` wraps a slice device's fields in `basic` in `release`."""
    types = release.types(version)
    device = types.struct("Device") if types else None
    return device is not None and "basic" in device


def flatten_claim_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """v1 `exactly.*` back to the request level (v1beta1; docs/dra-api.md 2.2 "Reverse direction")."""
    out = plain_copy(spec)
    for request in (out.get("devices") or {}).get("requests") or []:
        exactly = request.pop("exactly", None)
        if isinstance(exactly, dict):
            request.update(exactly)
    return out


def wrap_slice_devices(spec: dict[str, Any]) -> dict[str, Any]:
    """v1 devices -> v1beta1 `basic:` wrapper."""
    out = plain_copy(spec)
    devices = []
    for device in out.get("devices") or []:
        basic = {k: v for k, v in device.items() if k != _DEVICE_NAME}
        devices.append({_DEVICE_NAME: device.get(_DEVICE_NAME), "basic": basic})
    if "devices" in out:
        out["devices"] = devices
    return out


def _claim_base(kind: str) -> int:
    return 2 if kind == "ResourceClaimTemplate" else 1  # spec.spec.devices or spec.devices


def _to_hub(parts: PathParts, kind: str) -> PathParts:
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        i = _claim_base(kind) + 3  # <spec>.devices.requests[n].<field>
        if len(parts) > i and parts[i - 3 : i - 1] == ("devices", "requests") and parts[i] not in _REQUEST_OWN:
            return (*parts[:i], "exactly", *parts[i:])
    if kind == "ResourceSlice" and len(parts) > 4 and parts[:2] == ("spec", "devices") and parts[3] == "basic":
        return (*parts[:3], *parts[4:])
    return parts


def _from_hub(parts: PathParts, kind: str) -> PathParts:
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        i = _claim_base(kind) + 3
        if len(parts) > i + 1 and parts[i - 3 : i - 1] == ("devices", "requests") and parts[i] == "exactly":
            return (*parts[:i], *parts[i + 1 :])
    if kind == "ResourceSlice" and len(parts) > 3 and parts[:2] == ("spec", "devices") and parts[3] != _DEVICE_NAME:
        return (*parts[:3], "basic", *parts[3:])
    return parts


def input_path(parts: PathParts, kind: str, written_flat: bool, input_version: str) -> PathParts:
    """A path in an object written in the flat (or hub) shape, as the same field's path in the input."""
    hub = _to_hub(parts, kind) if written_flat else parts
    return _from_hub(hub, kind) if input_version in _FLAT_READ_VERSIONS else hub


def written_flat(release: Release, version: str, kind: str) -> bool:
    if kind in CLAIM_KINDS:
        return flat_requests(release, version)
    return kind == "ResourceSlice" and basic_devices(release, version)


def write_hub(hub: dict[str, Any], kind: str, target: Target) -> dict[str, Any]:
    """A hub-form (v1) object in the version `target` serves, in that version's shape."""
    version = target.api_version_for(kind)
    out = {"apiVersion": f"{RESOURCE_GROUP}/{version}", **{k: v for k, v in hub.items() if k != "apiVersion"}}
    if not written_flat(target.release, version, kind):
        return out
    if kind == "ResourceClaimTemplate":
        out["spec"] = {**out["spec"], "spec": flatten_claim_spec(out["spec"]["spec"])}
    elif kind == "ResourceClaim":
        out["spec"] = flatten_claim_spec(out["spec"])
    elif kind == "ResourceSlice":
        out["spec"] = wrap_slice_devices(out["spec"])
    return out
