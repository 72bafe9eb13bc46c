"""Helpers shared by the engine tests: object builders, finding filters and the device-count invariant.

The invariant helpers are written independently of the engine (own quantity parsing, own reading of
templates) so that the tests check the engine instead of repeating it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import corpus
import pods
import yaml

from dra_migrate.engine import ConversionResult, Finding, Severity, Target
from dra_migrate.manifests.schema import validate_object

T132 = Target.parse("1.32")
T133 = Target.parse("1.33")
T134 = Target.parse("1.34")
T135 = Target.parse("1.35")

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MANAGED_BY = ("app.kubernetes.io/managed-by", "dra-migrate")

MIG_SELECTOR = 'device.attributes["gpu.nvidia.com"].profile == "{}"'

# What each device-plugin name used by the tests stands for in DRA: (DeviceClass, CEL selectors).
DeviceKey = tuple[str, tuple[str, ...]]
RESOURCE_KEYS: dict[str, DeviceKey] = {
    "nvidia.com/gpu": ("gpu.nvidia.com", ()),
    "nvidia.com/mig-1g.5gb": ("mig.nvidia.com", (MIG_SELECTOR.format("1g.5gb"),)),
    "nvidia.com/mig-2g.10gb": ("mig.nvidia.com", (MIG_SELECTOR.format("2g.10gb"),)),
    "amd.com/gpu": ("gpu.amd.com", ()),
}


# --- builders ---------------------------------------------------------------------------------


def pod(spec: dict[str, Any], name: str = "p", namespace: str | None = "ns") -> dict[str, Any]:
    """A Pod in namespace `ns` unless told otherwise: templates the engine writes go beside it."""
    return pods.pod(spec, name, namespace)


def pod_of(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return pods.pod_of(containers, init, namespace="ns", **spec)


# --- results ----------------------------------------------------------------------------------


def converted(result: ConversionResult) -> dict[str, Any]:
    """The converted object; fails the test when the engine dropped it."""
    assert result.object is not None, "object was dropped"
    return result.object


# --- findings ---------------------------------------------------------------------------------


def findings(result: ConversionResult, rule: str | None = None, severity: Severity | None = None) -> list[Finding]:
    return [
        f for f in result.findings if (rule is None or f.rule == rule) and (severity is None or f.severity is severity)
    ]


def errors(result: ConversionResult) -> list[Finding]:
    return findings(result, severity=Severity.ERROR)


def error_keys(result: ConversionResult) -> set[tuple[str, str]]:
    return {(f.rule, f.path) for f in errors(result)}


# --- schema -----------------------------------------------------------------------------------


def schema_errors(obj: dict[str, Any], target: Target = T134) -> tuple[str, ...]:
    """Strict schema errors; a kind the release has no schema for counts as an error here."""
    result = validate_object(obj, target, strict=True)
    if not result.checked:
        return (f"no schema for {obj.get('apiVersion')} {obj.get('kind')} in {target}",)
    return result.errors


def as_pod(pod_spec: dict[str, Any], container_fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Pod around a CRD's pod spec; single-container fields (KServe model formats) become containers."""
    spec = {k: v for k, v in pod_spec.items() if k not in container_fields}
    singles = [{"name": key, "image": "model-server", **pod_spec[key]} for key in container_fields if key in pod_spec]
    if singles:
        spec["containers"] = [*spec.get("containers", []), *singles]
    for container in singles:  # model-format fields such as storageUri are not container fields
        for extra in [k for k in container if k in ("storageUri", "runtimeVersion", "protocolVersion")]:
            del container[extra]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wrapped"}, "spec": spec}


# --- corpus -----------------------------------------------------------------------------------


def load_documents(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def corpus_files(sub: str) -> list[Path]:
    return corpus.manifests(sub)


# --- the device-count invariant ----------------------------------------------------------------


def parse_count(value: Any) -> int:
    """A device count from an int or a quantity string ("2", "1000m"); test inputs only use these."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    text = str(value).strip()
    number = Decimal(text[:-1]) / 1000 if text.endswith("m") else Decimal(text)
    if number != number.to_integral_value():
        raise ValueError(value)
    return int(number)


@dataclass(frozen=True)
class Slot:
    """One container of a pod spec, in start order (init containers first)."""

    kind: str  # "initContainers" | "containers"
    index: int
    container: dict[str, Any]

    @property
    def sidecar(self) -> bool:
        return self.kind == "initContainers" and self.container.get("restartPolicy") == "Always"

    @property
    def long_running(self) -> bool:
        return self.kind == "containers" or self.sidecar

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.index)


def slots(pod_spec: Mapping[str, Any]) -> list[Slot]:
    out = []
    for kind in ("initContainers", "containers"):
        for index, item in enumerate(pod_spec.get(kind) or []):
            out.append(Slot(kind, index, item))
    return out


def requested(item: Mapping[str, Any], resource: str) -> int:
    """The container's device-plugin count for `resource` (limits win; requests must equal them)."""
    resources = item.get("resources") or {}
    for section in ("limits", "requests"):
        values = resources.get(section) or {}
        if resource in values:
            return parse_count(values[resource])
    return 0


def device_plugin_need(pod_spec: Mapping[str, Any], resource: str) -> int:
    """Devices the pod needs under the device plugin: init containers run one at a time (each next to
    the sidecars started before it); app containers and sidecars run together."""
    init_peak = 0
    running = 0  # sidecars started so far
    long_running_total = 0
    for slot in slots(pod_spec):
        count = requested(slot.container, resource)
        if slot.long_running:
            long_running_total += count
            if slot.sidecar:
                running += count
        else:
            init_peak = max(init_peak, count + running)
    return max(init_peak, long_running_total)


def template_request(template: Mapping[str, Any]) -> tuple[DeviceKey, int]:
    """(DeviceClass + selectors, count) of a generated template, in any of v1/v1beta2/v1beta1 shapes."""
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert len(requests) == 1, template
    request = requests[0]
    body = request.get("exactly", request)
    selectors = tuple(s["cel"]["expression"] for s in body.get("selectors") or [])
    return (body["deviceClassName"], selectors), int(body.get("count", 1))


def generated_claims(
    pod_spec: Mapping[str, Any], templates: Iterable[Mapping[str, Any]]
) -> dict[str, tuple[DeviceKey, int]]:
    """Pod claim name -> (device key, count) for the claims that use one of `templates`."""
    by_name = {t["metadata"]["name"]: template_request(t) for t in templates}
    out: dict[str, tuple[DeviceKey, int]] = {}
    for claim in pod_spec.get("resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName")
        if name in by_name:
            out[claim["name"]] = by_name[name]
    return out


def dra_need(pod_spec: Mapping[str, Any], templates: Iterable[Mapping[str, Any]]) -> Counter[DeviceKey]:
    """Devices the converted pod's generated claims allocate, per device key."""
    total: Counter[DeviceKey] = Counter()
    for key, count in generated_claims(pod_spec, templates).values():
        total[key] += count
    return total


def container_claims(item: Mapping[str, Any]) -> list[str]:
    return [c["name"] for c in (item.get("resources") or {}).get("claims") or []]


def visible(
    pod_spec: Mapping[str, Any], templates: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, int], Counter[DeviceKey]]:
    """Per container: devices of generated claims it can see, per device key."""
    claims = generated_claims(pod_spec, list(templates))
    out: dict[tuple[str, int], Counter[DeviceKey]] = {}
    for slot in slots(pod_spec):
        seen: Counter[DeviceKey] = Counter()
        for name in dict.fromkeys(container_claims(slot.container)):
            if name in claims:
                key, count = claims[name]
                seen[key] += count
        out[slot.key] = seen
    return out


def check_invariant(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    templates: list[dict[str, Any]],
    resources: Iterable[str],
    key_for: Callable[[str], DeviceKey] = RESOURCE_KEYS.__getitem__,
) -> None:
    """Assert the docstring's promises for every resource in `resources` (all converted without error):

    * the generated claims allocate exactly the device-plugin need (never more, never fewer);
    * every long-running container sees exactly its count, each through claims no other long-running
      container uses; every init container sees at least its count;
    * an init container never shares a claim with a sidecar that is already running next to it.
    """
    need = dra_need(after, templates)
    sees = visible(after, templates)
    before_slots = {s.key: s for s in slots(before)}
    for resource in resources:
        key = key_for(resource)
        assert need[key] == device_plugin_need(before, resource), (resource, dict(need))
        for slot_key, slot in before_slots.items():
            count = requested(slot.container, resource)
            got = sees[slot_key][key]
            if slot.long_running:
                assert got == count, (resource, slot_key, got, count)
            else:
                assert got >= count, (resource, slot_key, got, count)
    generated = generated_claims(after, templates)
    owners: dict[str, tuple[str, int]] = {}
    after_slots = slots(after)
    for slot in after_slots:
        if slot.long_running:
            for name in container_claims(slot.container):
                if name in generated:
                    assert name not in owners, f"{name} shared by long-running {owners.get(name)} and {slot.key}"
                    owners[name] = slot.key
    for position, slot in enumerate(after_slots):
        if slot.long_running:
            continue
        started = {name for s in after_slots[:position] if s.sidecar for name in container_claims(s.container)}
        shared = started & set(container_claims(slot.container)) & set(generated)
        assert not shared, f"init container {slot.key} shares {shared} with a running sidecar"


def all_pod_claim_names(pod_spec: Mapping[str, Any]) -> list[str]:
    return [c.get("name") for c in pod_spec.get("resourceClaims") or []]


def iter_containers(pod_spec: Mapping[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for index, item in enumerate(pod_spec.get(kind) or []):
            yield kind, index, item
