"""ResourceQuotas that converted pods would escape (the `webhook.quotaGap` policy).

A quota on `requests.nvidia.com/gpu` is charged by the pods that ask for the device-plugin
name. Once a pod is converted it asks for nothing of the kind: its devices come from
ResourceClaims, which the resource-claim quota evaluator charges to other keys
(engine `claim_quota_keys`, after kubernetes pkg/quota/v1/evaluator/core/resource_claims.go):
`<deviceclass>.deviceclass.resource.k8s.io/devices` always, and, with DRAExtendedResource on
by default in the release and a class whose `extendedResourceName` is R, `requests.R` too.

Claims are charged only by quotas without scopes (the evaluator matches no scope). So a
namespace with a quota on `requests.R` but none, unscoped, on a key its claims are charged
to, would see its GPU quota silently stop counting converted pods; and a scoped quota on
`requests.R` (per PriorityClass, say) stops counting them whatever other quotas hold. Only the `requests.`
form limits pods: a bare `nvidia.com/gpu` key in a quota is never charged by the pod
evaluator, so there is nothing to escape.

A quota that counts the claims may be used up. Before conversion the ResourceQuota admission plugin
refused such a pod at once (`exceeded quota: ...`); a converted pod asks for no device and is admitted,
and only the claims the resourceclaim controller makes from its templates are refused, so the pod
stays Pending for good. `quota_exceeded` finds that case at admission: for each key a converted
pod's claims are charged to, the quota's `status.used` plus the devices of the pod's claims against
its `spec.hard`, and the pod is refused with the plugin's own wording.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_migrate.engine import (
    PER_CLASS_SUFFIX,
    REQUESTS_PREFIX,
    Conversion,
    QuantityError,
    Target,
    claim_quota_keys,
    class_quota_name,
    device_count,
)
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.resource_api import RESOURCE_QUOTAS, ResourceApi, list_all
from dra_migrate.webhook.watchcache import ClusterCopy


@dataclass(frozen=True, slots=True)
class QuotaRecord:
    """What the watched copy keeps of a ResourceQuota."""

    name: str
    hard: frozenset[str]
    scoped: bool
    # (key, hard, used) of the keys whose limit is a whole count (devices, requests.<name>): status,
    # as the quota controller and the admission plugin keep it.
    counts: tuple[tuple[str, int, int], ...] = ()


def _count(value: Any) -> int | None:
    try:
        return device_count(value)
    except QuantityError:
        return None


def quota_record(obj: Mapping[str, Any]) -> QuotaRecord:
    metadata = obj.get("metadata")
    spec = obj.get("spec")
    name = str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""
    spec = spec if isinstance(spec, Mapping) else {}
    hard = spec.get("hard")
    scoped = bool(spec.get("scopes")) or bool(spec.get("scopeSelector"))
    status = obj.get("status")
    status = status if isinstance(status, Mapping) else {}
    used = status.get("used")
    used = used if isinstance(used, Mapping) else {}
    counts = []
    for key, value in hard.items() if isinstance(hard, Mapping) else ():
        limit = _count(value) if isinstance(key, str) and _counts_devices(key) else None
        if limit is not None:
            counts.append((key, limit, _count(used.get(key, 0)) or 0))
    keys = frozenset(str(k) for k in hard) if isinstance(hard, Mapping) else frozenset()
    return QuotaRecord(name, keys, scoped, tuple(counts))


def _counts_devices(key: str) -> bool:
    return key.startswith(REQUESTS_PREFIX) or key.endswith(PER_CLASS_SUFFIX)


@dataclass(frozen=True, slots=True)
class QuotaGap:
    quota: str
    limited: str  # the quota key the pod was charged to before: requests.<resource>
    device_class: str
    key_to_add: str
    scoped: bool = False  # the quota has scopes: no key of it ever counts claims

    def describe(self, namespace: str) -> str:
        if self.scoped:
            return (
                f"ResourceQuota {namespace}/{self.quota} limits {self.limited} for the pods its scopes select, and "
                f"quotas with scopes are never charged for ResourceClaims (DeviceClass {self.device_class}): a "
                "converted pod would escape it; keep such pods on the device plugin (dra-migrate.io/skip) or "
                "replace the scoped limit"
            )
        return (
            f"ResourceQuota {namespace}/{self.quota} limits {self.limited}, which the claims of a converted pod "
            f'(DeviceClass {self.device_class}) are not charged to; add "{self.key_to_add}" to a ResourceQuota '
            f"without scopes in {namespace}"
        )


def quota_gaps(
    conversions: Iterable[Conversion],
    quotas: Sequence[QuotaRecord],
    target: Target,
    extended_names: Mapping[str, str],
) -> list[QuotaGap]:
    """One gap per (quota, converted resource, class) that converted pods would escape, sorted.

    `extended_names` maps a DeviceClass to the extendedResourceName it serves in the cluster.
    """
    counted = frozenset().union(*(q.hard for q in quotas if not q.scoped))
    gaps: set[QuotaGap] = set()
    for conversion in conversions:
        limited = f"{REQUESTS_PREFIX}{conversion.resource}"
        device_class = conversion.device_class_name
        charged = claim_quota_keys(device_class, extended_names.get(device_class), target)
        covered = bool(charged & counted)  # an unscoped quota counts the claims: unscoped limits hold
        for quota in quotas:
            if limited in quota.hard and (quota.scoped or not covered):
                gap = QuotaGap(quota.name, limited, device_class, class_quota_name(device_class), quota.scoped)
                gaps.add(gap)
    return sorted(gaps, key=lambda gap: (gap.quota, gap.limited, gap.device_class))


@dataclass(frozen=True, slots=True)
class QuotaExceeded:
    quota: str
    key: str
    requested: int
    used: int
    limited: int

    def describe(self) -> str:
        """The ResourceQuota admission plugin's wording for a pod it refuses."""
        return (
            f"exceeded quota: {self.quota}, requested: {self.key}={self.requested}, used: {self.key}={self.used}, "
            f"limited: {self.key}={self.limited}"
        )


def claimed_devices(templates: Iterable[Mapping[str, Any]], pod: Mapping[str, Any]) -> dict[str, int]:
    """DeviceClass -> devices the pod's claims made from `templates` (the conversion's) will hold."""
    counts: dict[str, list[tuple[str, int]]] = {}
    for template in templates:
        devices = template["spec"]["spec"]["devices"]
        for request in devices.get("requests") or []:
            # v1 and v1beta2 nest the request in `exactly`; v1beta1 has its fields on the request itself
            exactly = request.get("exactly") if isinstance(request.get("exactly"), Mapping) else request
            counted = (str(exactly.get("deviceClassName")), int(exactly.get("count", 1)))
            counts.setdefault(template["metadata"]["name"], []).append(counted)
    claimed: dict[str, int] = {}
    for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName") if isinstance(claim, Mapping) else None
        for device_class, count in counts.get(name, []) if isinstance(name, str) else []:
            claimed[device_class] = claimed.get(device_class, 0) + count
    return claimed


def quota_exceeded(
    devices: Mapping[str, int],
    quotas: Sequence[QuotaRecord],
    target: Target,
    extended_names: Mapping[str, str],
) -> list[QuotaExceeded]:
    """The limits the pod's claims would pass, in the quotas that count claims (those without scopes)."""
    exceeded: list[QuotaExceeded] = []
    for device_class, requested in sorted(devices.items()):
        charged = claim_quota_keys(device_class, extended_names.get(device_class), target)
        for quota in quotas:
            if quota.scoped:
                continue
            for key, limited, used in quota.counts:
                if key in charged and used + requested > limited:
                    exceeded.append(QuotaExceeded(quota.name, key, requested, used, limited))
    return exceeded


class QuotaLookup:
    """A namespace's ResourceQuotas: from the watched copy, or listed when it is not current."""

    def __init__(self, api: ResourceApi, cache: ClusterCopy[QuotaRecord] | None = None) -> None:
        self._api = api
        self._cache = cache

    def quotas(self, namespace: str, budget: Budget) -> list[QuotaRecord]:
        if self._cache is not None and self._cache.synced:
            return self._cache.items(namespace)
        page = list_all(self._api, RESOURCE_QUOTAS, namespace, budget.timeout("list_resourcequotas"))
        return [quota_record(item) for item in page.items]
