"""Hub (v1 shape) -> the version the target serves."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.plain import plain_copy

_DEVICE_NAME = "name"


def flatten_claim_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """v1 `exactly.*` back to the request level (v1beta1; dra-api.md 2.2 "Reverse direction")."""
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
