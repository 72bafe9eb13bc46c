"""Quota continuity: a GPU limit in a ResourceQuota must keep limiting once pods use claims.

The quota system charges device-plugin requests to `requests.<name>` and ResourceClaims to
`<deviceclass>.deviceclass.resource.k8s.io/devices` (k8s.io/api core/v1 ResourceClaimsPerClass;
pkg/quota/v1/evaluator/core/resource_claims.go). Pods converted to claims stop counting against
`requests.nvidia.com/gpu`, so a namespace limited to 1 GPU could take any number of claims. Each
such entry gets a device-class entry beside it with the same count.

Names served by KEP-5004 are the exception: where DRAExtendedResource is on and a DeviceClass maps
the name through extendedResourceName, the claim evaluator charges the claims of that class to
`requests.<name>` as well, and the old entry keeps working by itself.

A scoped quota (`scopes`, `scopeSelector`: PriorityClass, Terminating, BestEffort, ...) tracks pods
only: ResourceClaims are never charged to it, so no entry added there would limit converted pods.
It is left as it is, with a warning saying what would limit them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from dra_migrate.engine.findings import Finding, Findings, json_path
from dra_migrate.engine.mapping import DeviceRequestSpec, MappingTable
from dra_migrate.engine.quantity import QuantityError, device_count
from dra_migrate.engine.versions import Target

REQUESTS_PREFIX = "requests."
PER_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"
IMPLICIT_CLASS_PREFIX = "requests.deviceclass.resource.kubernetes.io/"


def class_quota_name(device_class: str) -> str:
    return device_class + PER_CLASS_SUFFIX


def claim_quota_keys(device_class: str, extended_name: str | None, target: Target) -> frozenset[str]:
    """The quota keys a ResourceClaim for devices of `device_class` is charged to on `target`
    (`extended_name`: the name the class maps through extendedResourceName in the cluster, if any)."""
    keys = {class_quota_name(device_class)}
    if extended_name and target.feature_enabled("DRAExtendedResource"):
        keys |= {REQUESTS_PREFIX + extended_name, IMPLICIT_CLASS_PREFIX + device_class}
    return frozenset(keys)


def convert_quota(
    quota: dict[str, Any], mappings: MappingTable, served_by_kep5004: Collection[str]
) -> tuple[dict[str, Any] | None, list[Finding]]:
    """The ResourceQuota with device-class entries added (None when nothing is added), and findings."""
    spec = quota.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("hard"), dict):
        return None, []
    hard: dict[str, Any] = spec["hard"]
    findings = Findings()
    by_class: dict[str, list[tuple[str, DeviceRequestSpec, Any]]] = {}
    for key, value in hard.items():
        if not isinstance(key, str) or not key.startswith(REQUESTS_PREFIX):
            continue
        name = key[len(REQUESTS_PREFIX) :]
        request = mappings.resolve(name)
        if not isinstance(request, DeviceRequestSpec):
            continue
        if name in served_by_kep5004:
            findings.info(
                "quota-kept",
                json_path("spec", "hard", key),
                f"{key} keeps limiting: a DeviceClass maps {name} (KEP-5004) and DRAExtendedResource charges "
                "its claims to this entry too",
            )
            continue
        by_class.setdefault(request.device_class_name, []).append((key, request, value))
    added: dict[str, Any] = {}
    if by_class and (spec.get("scopes") or spec.get("scopeSelector")):
        for device_class, entries in by_class.items():
            names = ", ".join(key for key, _, _ in entries)
            findings.warning(
                "quota-scoped",
                json_path("spec", "hard", entries[0][0]),
                f"this quota is scoped (scopes/scopeSelector), and Kubernetes charges ResourceClaims only to "
                f"unscoped quotas: pods converted to claims of {device_class} escape {names}. Limit them with an "
                f"unscoped quota holding {class_quota_name(device_class)}, or leave them to KEP-5004",
            )
        return None, findings.items
    for device_class, entries in by_class.items():
        target = class_quota_name(device_class)
        where = json_path("spec", "hard", target)
        if target in hard:
            continue  # set by the user already
        keys = [key for key, _, _ in entries]
        if len(entries) == 1:
            added[target] = entries[0][2]
            if entries[0][1].selectors:
                findings.warning(
                    "quota-not-expressible",
                    where,
                    f"{keys[0]} becomes {target}, which counts every device of DeviceClass {device_class}, "
                    "not only those its selectors pick (a MIG profile, say): a quota counts devices per class",
                )
        else:
            try:
                added[target] = sum(device_count(value) for _, _, value in entries)
            except QuantityError as exc:
                findings.warning("quota-not-expressible", where, f"{', '.join(keys)}: {exc}; nothing added")
                continue
            findings.warning(
                "quota-not-expressible",
                where,
                f"{', '.join(keys)} all become claims of DeviceClass {device_class}, and a quota counts devices "
                f"per class, not per selector: {target} limits their sum ({added[target]}); the per-name limits "
                "no longer apply to converted pods",
            )
        findings.info(
            "quota-device-class",
            where,
            f"{target}: {added[target]} added beside {', '.join(keys)}, so the namespace's limit also counts "
            "ResourceClaims once its pods use them",
        )
    if not added:
        return None, findings.items
    return {**quota, "spec": {**spec, "hard": {**hard, **added}}}, findings.items


_LIMIT_SECTIONS = ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio")


def report_limit_range(limit_range: dict[str, Any], mappings: MappingTable) -> list[Finding]:
    """A LimitRange that names a converted resource: its `default`/`defaultRequest` would give converted
    containers a device-plugin request back (one vendor then served both ways, and the pod unschedulable
    on DRA-only nodes), and its `max`/`min` stop applying to claims."""
    findings = Findings()
    spec = limit_range.get("spec")
    limits = spec.get("limits") if isinstance(spec, dict) else None
    for i, item in enumerate(limits if isinstance(limits, list) else ()):
        for section in _LIMIT_SECTIONS:
            values = item.get(section) if isinstance(item, dict) else None
            for name in values if isinstance(values, dict) else ():
                if not isinstance(mappings.resolve(str(name)), DeviceRequestSpec):
                    continue
                if section in ("default", "defaultRequest"):
                    effect = (
                        "gives every container that does not ask for it a device-plugin request for it again, "
                        "converted containers included (one vendor served both by the device plugin and DRA): "
                        "remove this entry before converting the namespace's workloads"
                    )
                else:
                    effect = "does not apply to ResourceClaims: converted pods are no longer held to it"
                findings.warning(
                    "limit-range-device",
                    json_path("spec", "limits", i, section, str(name)),
                    f"this LimitRange's {section} for {name} {effect}",
                )
    return findings.items


def report_kueue_cluster_queue(
    queue: dict[str, Any], mappings: MappingTable, kept: Callable[[DeviceRequestSpec], bool]
) -> list[Finding]:
    """Kueue counts pod requests for coveredResources: converted pods request none of them, while pods
    left to KEP-5004 (`kept`) still do."""
    findings = Findings()
    spec = queue.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    for i, group in enumerate(groups if isinstance(groups, list) else ()):
        covered = group.get("coveredResources") if isinstance(group, dict) else None
        for j, name in enumerate(covered if isinstance(covered, list) else ()):
            spec = mappings.resolve(name) if isinstance(name, str) else None
            if isinstance(spec, DeviceRequestSpec) and not kept(spec):
                findings.warning(
                    "quota-not-expressible",
                    json_path("spec", "resourceGroups", i, "coveredResources", j),
                    f"Kueue charges {name} from pod requests, which converted pods no longer make, so this quota "
                    "stops limiting them: map the DeviceClass to a Kueue resource (Kueue's DRA support, "
                    "deviceClassMappings) before converting",
                )
    return findings.items
