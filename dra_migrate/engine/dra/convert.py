"""Dispatch one `resource.k8s.io` object: read into the hub, check it against the target, write it out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dra_migrate.engine.dra import readers, writers
from dra_migrate.engine.dra.checks import check_claim_spec
from dra_migrate.engine.dra.fit import fit_to_target
from dra_migrate.engine.findings import Findings, PathParts
from dra_migrate.engine.plain import plain_copy
from dra_migrate.engine.versions import RESOURCE_GROUP, Target

# The kinds converted between versions; DeviceTaintRule is only checked against what the target serves.
CORE_KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})
_RUNTIME_ONLY = {"PodSchedulingContext", "PodScheduling"}
_FOLD_ONLY = {"ResourceClaimParameters", "ResourceClassParameters"}
_CLASSIC_VERSIONS = ("v1alpha1", "v1alpha2")


def _claim_spec_path(kind: str) -> tuple[str, ...]:
    return ("spec", "spec") if kind == "ResourceClaimTemplate" else ("spec",)


def _get(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _read_claim(obj: dict[str, Any], kind: str, version: str, findings: Findings) -> dict[str, Any] | None:
    path = _claim_spec_path(kind)
    spec = _get(obj, path)
    if not isinstance(spec, dict):
        findings.error("claim-spec-missing", ".".join(path), "claim spec missing")
        return None
    devices = spec.get("devices")
    if devices is not None and not isinstance(devices, dict):
        # no version accepts it: moving the claim would only move the problem
        where = ".".join((*path, "devices"))
        findings.error("schema-input", where, f"{where} is a {type(devices).__name__}, not a mapping; left as is")
        return None
    reader: Callable[[dict[str, Any], tuple[str, ...], Findings], dict[str, Any] | None]
    reader = readers.claim_spec_from_v1alpha2 if version in _CLASSIC_VERSIONS else readers.claim_spec_from_flat
    hub_spec = (
        readers.claim_spec_from_hub_shaped(spec) if version in ("v1beta2", "v1") else reader(spec, path, findings)
    )
    if hub_spec is None:
        return None
    out = _without_status(obj, findings)
    if kind == "ResourceClaimTemplate":
        out["spec"]["spec"] = hub_spec
    else:
        out["spec"] = hub_spec
    return out


def _read(obj: dict[str, Any], kind: str, version: str, findings: Findings) -> dict[str, Any] | None:
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        return _read_claim(obj, kind, version, findings)
    if kind == "ResourceClass":
        return readers.device_class_from_v1alpha2(obj, findings)
    if kind == "DeviceClass":
        return readers.device_class_from_structured(obj, findings)
    if kind == "ResourceSlice":
        if version in _CLASSIC_VERSIONS:
            return readers.slice_from_v1alpha2(obj, findings)
        if version in ("v1alpha3", "v1beta1"):
            return readers.slice_from_basic(obj, plain_capacity=version == "v1alpha3")
        return _without_status(obj, findings)
    return None


def _without_status(obj: dict[str, Any], findings: Findings) -> dict[str, Any]:
    """A copy without `status` (the server owns it; docs/dra-api.md 2.7), saying so when it held anything."""
    out = plain_copy(obj)
    if out.pop("status", None):
        findings.warning(
            "status-dropped",
            "status",
            "status was dropped (the server owns it): applying the converted object does not carry its "
            "allocation or conditions, and the server writes them anew",
        )
    return out


def _warn_if_off_by_default(version: str, kind: str, target: Target, findings: Findings) -> None:
    """1.32 and 1.33 serve resource.k8s.io only when enabled: an object written for them is refused
    (and a pod's claims dropped) until it is."""
    release = target.release
    if release.serves(version, kind) and not release.on_by_default(version, kind):
        findings.warning(
            "api-off-by-default",
            "apiVersion",
            f"{kind} {version} is served by {target} only when enabled: "
            f"--runtime-config={RESOURCE_GROUP}/{version}=true",
        )


def _check_device_taint_rule(version: str, target: Target, findings: Findings) -> None:
    kind = "DeviceTaintRule"
    release = target.release
    if release.serves(version, kind):
        _warn_if_off_by_default(version, kind, target, findings)
    else:
        served = ", ".join(release.served_versions(kind)) or "none"
        findings.error(
            "not-served",
            "apiVersion",
            f"{kind} {version} is not served by Kubernetes {target} (versions it serves: {served}); left as is",
        )


_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


def _convert_device_taint_rule(
    obj: dict[str, Any], version: str, target: Target, findings: Findings
) -> tuple[dict[str, Any], bool]:
    """A DeviceTaintRule moves to the version the target's release table prefers (1.37: v1, served by
    default), when its fields fit that version's type; otherwise it stays and is checked as it is."""
    kind = "DeviceTaintRule"
    release = target.release
    preferred = target.api_version_for(kind) if release.served_versions(kind) else version
    already_fine = version == preferred or (release.serves(version, kind) and release.on_by_default(version, kind))
    if already_fine:
        _check_device_taint_rule(version, target, findings)
        return obj, False
    taint = (obj.get("spec") or {}).get("taint") if isinstance(obj.get("spec"), dict) else None
    effect = taint.get("effect") if isinstance(taint, dict) else None
    if effect not in _TAINT_EFFECTS:
        # an invalid rule is invalid in every version: moving it would only move the problem
        findings.error(
            "schema-input",
            "spec.taint.effect",
            f"effect {effect!r} is not one of {', '.join(_TAINT_EFFECTS)}: no version accepts this rule; left as is",
        )
        return obj, False
    written = _without_status(obj, findings)
    written["apiVersion"] = f"{RESOURCE_GROUP}/{preferred}"
    if not fit_to_target(written, kind, target, findings, lambda parts: parts).ok:
        return obj, False
    _check_device_taint_rule(preferred, target, findings)
    findings.info("api-version", "apiVersion", f"{obj.get('apiVersion')} {kind} -> {written['apiVersion']} {kind}")
    return written, True


def convert_dra_object(obj: dict[str, Any], target: Target, findings: Findings) -> tuple[dict[str, Any] | None, bool]:
    """Returns (object or None when dropped, changed)."""
    version = str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
    kind = str(obj.get("kind", ""))
    if kind in _RUNTIME_ONLY:
        findings.warning(
            "runtime-object-dropped",
            "",
            f"{kind} was written by the scheduler for classic DRA and was removed in 1.32 with no replacement; dropped",
        )
        return None, True
    if kind in _FOLD_ONLY:
        findings.error(
            "structured-parameters-1.30",
            "",
            f"{kind} (1.30) has no standalone equivalent: fold its "
            "selectors into CEL (device.attributes[...]) and its vendorParameters into opaque config of "
            "the claim or DeviceClass that references it; left as is",
        )
        return obj, False
    if kind == "DeviceTaintRule":
        return _convert_device_taint_rule(obj, version, target, findings)
    if kind not in CORE_KINDS and kind != "ResourceClass":
        return obj, False
    if kind in writers.CLAIM_KINDS:
        check_claim_spec(_get(obj, _claim_spec_path(kind)), version, _claim_spec_path(kind), findings)
        if findings.has_errors:
            return obj, False
    hub = _read(obj, kind, version, findings)
    if hub is None:
        return obj, False
    out_kind = "DeviceClass" if kind == "ResourceClass" else kind
    same = version == target.api_version_for(out_kind) and kind == out_kind
    # Already in the target's version: kept as written, only fitted (empty fields the target lacks go).
    written = plain_copy(obj) if same else writers.write_hub(hub, out_kind, target)
    written_version = str(written["apiVersion"]).rsplit("/", 1)[-1]
    flat = writers.written_flat(target.release, written_version, out_kind)

    def input_parts(parts: PathParts) -> PathParts:
        return parts if same or kind != out_kind else writers.input_path(parts, kind, flat, version)

    fitted = fit_to_target(written, out_kind, target, findings, input_parts)
    if not fitted.ok:
        return obj, False
    _warn_if_off_by_default(written_version, out_kind, target, findings)
    if same:
        return (written, True) if fitted.dropped else (obj, False)
    if out_kind == "ResourceSlice":
        findings.warning(
            "resource-slice",
            "",
            "ResourceSlices are published by the DRA driver; converted for "
            "reference, but the driver will republish its own",
        )
    findings.info("api-version", "apiVersion", f"{obj.get('apiVersion')} {kind} -> {written['apiVersion']} {out_kind}")
    return written, True
