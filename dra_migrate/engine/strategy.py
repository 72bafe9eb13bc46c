"""Whether a device-plugin request is rewritten into a claim or left to KEP-5004 (docs/dra-api.md section 5).

Since KEP-5004 (`DRAExtendedResource`) the scheduler serves a plain `nvidia.com/gpu: 2` from DRA when
a DeviceClass names it in `spec.extendedResourceName`: no pod change at all. That path cannot
express everything a claim can, so the decision is taken per pod spec and resource name:

* strategy `claims`: always rewrite (every release with DRA).
* strategy `extendedResource`: keep whole-device requests as they are, except where KEP-5004
  cannot serve them (below); warn when the target has the gate off or no class is known.
* strategy `auto`: keep only where the target has `DRAExtendedResource` on by default and a known
  DeviceClass maps the name; rewrite everything else.

KEP-5004 cannot serve, so these are always rewritten:
* a pod pinned with `spec.nodeName`: it bypasses the scheduler, which is what allocates the devices;
* a request that needs CEL selectors or opaque config the mapping carries but the serving class
  lacks: the scheduler's special claim has only `ExactCount` of the class, nothing per request.
Ephemeral containers are never converted; counts must be whole and requests equal limits either
way (checked before this decision).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from dra_migrate.engine.mapping import DeviceRequestSpec, OpaqueConfig
from dra_migrate.engine.versions import Target

EXTENDED_RESOURCE_GATE = "DRAExtendedResource"


class Strategy(enum.StrEnum):
    AUTO = "auto"
    CLAIMS = "claims"
    EXTENDED_RESOURCE = "extendedResource"


class ServingClass(NamedTuple):
    """A DeviceClass that maps an extended resource name (`spec.extendedResourceName`)."""

    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[OpaqueConfig, ...] = ()

    def expresses(self, spec: DeviceRequestSpec) -> bool:
        """The class itself carries every selector and opaque config the mapping would put in a claim.

        A selector counts as carried when its text, quotes and spacing aside, is part of one of the
        class's expressions: classes often join conditions with `&&` (docs/field-notes.md).
        """
        own_cel = [_normal_cel(expression) for expression in self.selectors]
        own_config = {_config_key(c) for c in self.config}
        return all(any(_normal_cel(s) in cel for cel in own_cel) for s in spec.selectors) and all(
            _config_key(c) in own_config for c in spec.config
        )


def _normal_cel(expression: str) -> str:
    return re.sub(r"\s+", "", expression.replace("'", '"'))


def _config_key(config: OpaqueConfig) -> str:
    return json.dumps(config.as_dict(), sort_keys=True)


class Path(enum.StrEnum):
    CLAIM = "claim"
    EXTENDED_RESOURCE = "extended-resource"


class Route:
    __slots__ = ("path", "reason", "warning")

    def __init__(self, path: Path, reason: str, warning: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.warning = warning  # a problem with the chosen path the user must act on


def decide(
    resource: str,
    spec: DeviceRequestSpec,
    pinned_node: bool,
    strategy: Strategy,
    target: Target,
    serving: ServingClass | None,
) -> Route:
    """The path for `resource` in one pod spec (`pinned_node`: the pod spec sets nodeName; `serving`:
    the DeviceClass known to map the name, if any)."""
    if strategy is Strategy.CLAIMS:
        return Route(Path.CLAIM, "strategy claims")
    if spec.capacity:
        # the extended resource's own claim asks for whole devices of the class, wherever they are
        return Route(Path.CLAIM, "a share of a device, which only a claim asks for (capacity)")
    gate_on = target.feature_enabled(EXTENDED_RESOURCE_GATE)
    if pinned_node:
        return Route(
            Path.CLAIM,
            "the pod is pinned with spec.nodeName and bypasses the scheduler, which is what serves extended "
            "resources from DRA (KEP-5004)",
        )
    if strategy is Strategy.AUTO and not gate_on:
        known = f" (DeviceClass {serving.name!r} maps it, for releases that have the gate on)" if serving else ""
        return Route(Path.CLAIM, f"{EXTENDED_RESOURCE_GATE} is off by default in Kubernetes {target}{known}")
    if serving is None:
        if strategy is Strategy.AUTO:
            return Route(Path.CLAIM, f"no known DeviceClass maps {resource} through spec.extendedResourceName")
        if spec.selectors or spec.config:
            return Route(
                Path.CLAIM,
                "the request needs CEL selectors or opaque config, and no known DeviceClass that maps "
                f"{resource} carries them",
            )
    elif not serving.expresses(spec):
        return Route(
            Path.CLAIM,
            f"the request needs CEL selectors or opaque config that DeviceClass {serving.name!r} does not carry, "
            "and KEP-5004's claim has only the class's own",
        )
    problems = []
    if not gate_on:
        problems.append(f"feature gate {EXTENDED_RESOURCE_GATE} is off by default in Kubernetes {target}")
    if serving is None:
        problems.append(f"no known DeviceClass maps {resource} (emit one with --device-classes)")
    reason = _served_reason(resource, serving, target) if serving else "strategy extendedResource"
    return Route(Path.EXTENDED_RESOURCE, reason, "; ".join(problems) or None)


def _served_reason(resource: str, serving: ServingClass, target: Target) -> str:
    return (
        f"DeviceClass {serving.name!r} maps {resource} through spec.extendedResourceName and "
        f"{EXTENDED_RESOURCE_GATE} is on by default in Kubernetes {target}: the scheduler allocates it from DRA "
        "with no pod change (KEP-5004)"
        if target.feature_enabled(EXTENDED_RESOURCE_GATE)
        else f"DeviceClass {serving.name!r} maps {resource} through spec.extendedResourceName (KEP-5004)"
    )


def serving_classes(device_classes: Iterable[Mapping[str, Any]]) -> dict[str, list[ServingClass]]:
    """extendedResourceName -> the DeviceClasses that set it, the one the scheduler picks first.

    The scheduler picks the class created last, then the lexicographically first name
    (docs/dra-api.md section 5); objects without a creationTimestamp (manifests) sort by name.
    """
    found: dict[str, list[tuple[str, str, ServingClass]]] = {}
    for device_class in device_classes:
        spec = device_class.get("spec")
        metadata = device_class.get("metadata")
        if not isinstance(spec, dict) or not isinstance(metadata, dict):
            continue
        resource, name = spec.get("extendedResourceName"), metadata.get("name")
        if not (isinstance(resource, str) and resource and isinstance(name, str) and name):
            continue
        created = metadata.get("creationTimestamp")
        serving = ServingClass(name, _cel_selectors(spec), _opaque_configs(spec))
        found.setdefault(resource, []).append((str(created or ""), name, serving))
    ordered: dict[str, list[ServingClass]] = {}
    for resource, entries in found.items():
        # Newest first (ISO timestamps sort as text), then by name.
        entries.sort(key=lambda entry: entry[1])
        entries.sort(key=lambda entry: entry[0], reverse=True)
        ordered[resource] = [entry[2] for entry in entries]
    return ordered


def _cel_selectors(spec: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for selector in spec.get("selectors") or ():
        cel = selector.get("cel") if isinstance(selector, dict) else None
        expression = cel.get("expression") if isinstance(cel, dict) else None
        if isinstance(expression, str):
            out.append(expression)
    return tuple(out)


def _opaque_configs(spec: Mapping[str, Any]) -> tuple[OpaqueConfig, ...]:
    out = []
    for entry in spec.get("config") or ():
        opaque = entry.get("opaque") if isinstance(entry, dict) else None
        if isinstance(opaque, dict) and isinstance(opaque.get("driver"), str):
            out.append(OpaqueConfig(opaque["driver"], opaque.get("parameters") or {}))
    return tuple(out)
