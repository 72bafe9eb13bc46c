"""Invalid shapes of DRA objects seen in the wild, reported with the valid form (issue: blog-post constructs)."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.findings import Findings, json_path

_FLAT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")
_STRUCTURED = ("v1alpha3", "v1beta1", "v1beta2", "v1")


def check_claim_spec(spec: Any, version: str, base: tuple[str, ...], findings: Findings) -> None:
    if not isinstance(spec, dict) or version not in _STRUCTURED:
        return
    request_field = "requests[].exactly.allocationMode" if version in ("v1beta2", "v1") else "requests[].allocationMode"
    if "allocationMode" in spec:
        findings.error(
            "invalid-claim-allocation-mode",
            json_path(*base, "allocationMode"),
            f"{version} claims have no spec.allocationMode (that was v1alpha2's Immediate/WaitForFirstConsumer); "
            f"the per-request ExactCount/All mode is devices.{request_field}",
        )
    if "resourceClassName" in spec:
        findings.error(
            "invalid-resource-class-name",
            json_path(*base, "resourceClassName"),
            f"{version} claims have no resourceClassName; name the DeviceClass in devices.requests[]"
            + (".exactly.deviceClassName" if version in ("v1beta2", "v1") else ".deviceClassName"),
        )
    raw_devices = spec.get("devices")
    devices: dict[str, Any] = raw_devices if isinstance(raw_devices, dict) else {}
    for index, constraint in enumerate(devices.get("constraints") or []):
        if isinstance(constraint, dict) and "attributes" in constraint:
            findings.error(
                "invalid-constraint-attributes",
                json_path(*base, "devices", "constraints", index, "attributes"),
                'constraints have no attributes list: use matchAttribute: "<domain>/<attribute>" '
                "(one fully qualified attribute per constraint)",
            )
    for index, request in enumerate(devices.get("requests") or []):
        if not isinstance(request, dict):
            continue
        where = json_path(*base, "devices", "requests", index)
        flat = [k for k in _FLAT_FIELDS if k in request]
        if version in ("v1beta2", "v1") and flat:
            findings.error(
                "flat-request-in-v1",
                where,
                f"{version} requests keep {', '.join(flat)} under exactly: (or use firstAvailable); "
                "the flat form is v1beta1's",
            )
        if version in ("v1beta2", "v1") and not flat and ("exactly" in request) == ("firstAvailable" in request):
            findings.error(
                "exactly-or-first-available",
                where,
                "a request needs exactly one of exactly: or firstAvailable: "
                + ("(both are set)" if "exactly" in request else "(neither is set)"),
            )
        if version in ("v1alpha3", "v1beta1") and "exactly" in request:
            findings.error(
                "exactly-before-v1beta2",
                f"{where}.exactly",
                f"{version} has no exactly: wrapper (added in v1beta2); put its fields on the request itself",
            )
