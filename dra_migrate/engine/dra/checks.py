"""Invalid shapes of DRA objects seen in the wild, reported with the valid form (issue: blog-post constructs).

Fields set to unset values ("", null, [], {}, false, 0) count as absent, as they do to Kubernetes.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.dra.readers import REQUEST_FIELDS
from dra_migrate.engine.dra.unset import is_set
from dra_migrate.engine.findings import Findings, json_path

_STRUCTURED = ("v1alpha3", "v1beta1", "v1beta2", "v1")
_HUB_SHAPED = ("v1beta2", "v1")


def check_claim_spec(spec: Any, version: str, base: tuple[str, ...], findings: Findings) -> None:
    if not isinstance(spec, dict) or version not in _STRUCTURED:
        return
    request_field = "requests[].exactly.allocationMode" if version in _HUB_SHAPED else "requests[].allocationMode"
    if is_set(spec.get("allocationMode")):
        findings.error(
            "invalid-claim-allocation-mode",
            json_path(*base, "allocationMode"),
            f"{version} claims have no spec.allocationMode (that was v1alpha2's Immediate/WaitForFirstConsumer); "
            f"the per-request ExactCount/All mode is devices.{request_field}",
        )
    if is_set(spec.get("resourceClassName")):
        findings.error(
            "invalid-resource-class-name",
            json_path(*base, "resourceClassName"),
            f"{version} claims have no resourceClassName; name the DeviceClass in devices.requests[]"
            + (".exactly.deviceClassName" if version in _HUB_SHAPED else ".deviceClassName"),
        )
    raw_devices = spec.get("devices")
    devices: dict[str, Any] = raw_devices if isinstance(raw_devices, dict) else {}
    for index, constraint in enumerate(devices.get("constraints") or []):
        if isinstance(constraint, dict) and is_set(constraint.get("attributes")):
            findings.error(
                "invalid-constraint-attributes",
                json_path(*base, "devices", "constraints", index, "attributes"),
                'constraints have no attributes list: use matchAttribute: "<domain>/<attribute>" '
                "(one fully qualified attribute per constraint)",
            )
    for index, request in enumerate(devices.get("requests") or []):
        if isinstance(request, dict):
            _check_request(request, version, json_path(*base, "devices", "requests", index), findings)


def _check_request(request: dict[str, Any], version: str, where: str, findings: Findings) -> None:
    flat = [k for k in REQUEST_FIELDS if is_set(request.get(k))]
    exactly, first_available = is_set(request.get("exactly")), is_set(request.get("firstAvailable"))
    if version in _HUB_SHAPED and flat:
        findings.error(
            "flat-request-in-v1",
            where,
            f"{version} requests keep {', '.join(flat)} under exactly: (or use firstAvailable); "
            "the flat form is v1beta1's",
        )
    if version in _HUB_SHAPED and not flat and exactly == first_available:
        findings.error(
            "exactly-or-first-available",
            where,
            "a request needs exactly one of exactly: or firstAvailable: "
            + ("(both are set)" if exactly else "(neither is set)"),
        )
    if version not in _HUB_SHAPED and exactly:
        findings.error(
            "exactly-before-v1beta2",
            f"{where}.exactly",
            f"{version} has no exactly: wrapper (added in v1beta2); put its fields on the request itself",
        )
