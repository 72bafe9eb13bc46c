"""The configuration shared by the translator and the webhook: mapping table, policies, workload kinds.

A config file is validated against a JSON Schema with `additionalProperties: false` everywhere,
so a misspelt key is an error instead of a silently ignored setting (docs/field-notes.md, HAMi-DRA PR #65).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    import jsonschema

from dra_migrate.engine.mapping import (
    BUILTIN_MAPPINGS,
    DeviceMapping,
    DeviceRequestSpec,
    MappingTable,
    OpaqueConfig,
    SharedOn,
)
from dra_migrate.engine.strategy import ServingClass, Strategy
from dra_migrate.engine.validation import cel_problem, dns_subdomain_problem
from dra_migrate.engine.versions import DEFAULT_TARGET, Target, TargetVersionError
from dra_migrate.engine.workloads import BUILTIN_WORKLOADS, WorkloadKind, WorkloadTable, parse_path

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

_NODE_LABELS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}

_MAPPING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "resource": {"type": "string", "minLength": 1, "description": "the device-plugin resource name, exactly"},
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "a regular expression the whole resource name must match; its named groups can be "
            "used as ${name} in deviceClassName, selectors and classSelectors",
        },
        "deviceClassName": {
            "type": "string",
            "minLength": 1,
            "description": "the DeviceClass the claim asks for (a DNS subdomain, as the apiserver requires)",
        },
        "selectors": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": 32,
            "description": "CEL selectors of the request (syntax checked)",
        },
        "config": {
            "type": "array",
            "maxItems": 32,
            "description": "opaque driver configuration of the request",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["driver", "parameters"],
                "properties": {
                    "driver": {
                        "type": "string",
                        "pattern": _DNS_SUBDOMAIN,
                        "maxLength": 63,
                        "description": "the DRA driver the parameters are for",
                    },
                    "parameters": {"type": "object", "description": "the driver's parameters, as they are"},
                },
            },
        },
        "requestName": {
            "type": "string",
            "pattern": _DNS_LABEL,
            "maxLength": 63,
            "description": "the request's name in the template (default: from the resource name)",
        },
        "classSelectors": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": 32,
            "description": "what a DeviceClass written for this mapping selects (--device-classes)",
        },
        "unconvertible": {
            "type": "string",
            "minLength": 1,
            "description": "the name is kept as a device-plugin request and reported with this reason",
        },
        "keepsUnconverted": {
            "type": "array",
            "items": {"type": "string"},
            "description": "with unconvertible: these names are kept in the same container too",
        },
    },
    "oneOf": [{"required": ["resource"]}, {"required": ["pattern"]}],
}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "targetVersion": {
            "type": "string",
            "default": DEFAULT_TARGET,
            "description": "the Kubernetes release to write for (1.32: v1beta1, 1.33: v1beta2, 1.34 and later: v1); "
            "--target-version wins; the webhook takes the cluster's own release when this is not set",
        },
        "builtinMappings": {
            "type": "boolean",
            "default": True,
            "description": "use the built-in mapping table; false: only the mappings below",
        },
        "mappings": {
            "type": "array",
            "items": _MAPPING_SCHEMA,
            "description": "device-plugin names and the DeviceClass requests they become, before the built-ins; "
            "an entry with the same resource or pattern as a built-in replaces it",
        },
        "nodeName": {
            "type": "object",
            "additionalProperties": False,
            "description": "how spec.nodeName becomes node selection, so that the scheduler allocates claims",
            "properties": {
                "mode": {
                    "enum": ["nodeSelector", "nodeAffinity"],
                    "default": "nodeSelector",
                    "description": "nodeSelector on kubernetes.io/hostname, or a required node affinity on "
                    "metadata.name (exact where the hostname label differs from the node name)",
                },
                "scope": {
                    "enum": ["claims", "all"],
                    "default": "claims",
                    "description": "the pods whose nodeName is replaced: those that use claims, or all",
                },
            },
        },
        "strategy": {
            "enum": [s.value for s in Strategy],
            "default": Strategy.AUTO.value,
            "description": "rewrite device-plugin requests into claims, leave them to DeviceClasses that map "
            "the name (KEP-5004), or decide by the target's DRAExtendedResource default and the known classes; "
            "--strategy wins",
        },
        "resourceTolerations": {
            "type": "boolean",
            "default": True,
            "description": "converted pods keep the toleration the ExtendedResourceToleration admission plugin "
            "gave them (the webhook never adds it: the plugin runs before it)",
        },
        "clusterDeviceClasses": {
            "type": "array",
            "description": "DeviceClasses the target cluster has that map extended resource names (KEP-5004)",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "extendedResourceName"],
                "properties": {
                    "name": {
                        "type": "string",
                        "pattern": _DNS_SUBDOMAIN,
                        "maxLength": 253,
                        "description": "the DeviceClass's name",
                    },
                    "extendedResourceName": {
                        "type": "string",
                        "minLength": 1,
                        "description": "its spec.extendedResourceName",
                    },
                    "selectors": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "description": "the class's CEL selectors, to judge what it can serve",
                    },
                },
            },
        },
        "sharedDevices": {
            "type": "array",
            "description": "names the cluster shares (time-slicing, MPS); plan --write fills it in webhook-config.yaml",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["resource", "reason", "sharingNodes"],
                "properties": {
                    "resource": {"type": "string", "minLength": 1, "description": "the shared name"},
                    "reason": {"type": "string", "minLength": 1, "description": "the shared-device error's text"},
                    "sharingNodes": {
                        "type": "array",
                        "items": _NODE_LABELS,
                        "description": "label sets of the nodes that share the devices",
                    },
                    "otherNodes": {
                        "type": "array",
                        "items": _NODE_LABELS,
                        "description": "label sets of the nodes that serve the name as whole devices",
                    },
                    "shareCapacity": {
                        "type": "string",
                        "pattern": _DNS_LABEL,
                        "maxLength": 63,
                        "description": "the DRA driver hands out shares of this capacity: a pod that can land only "
                        "on sharing nodes gets a claim for one",
                    },
                    "wholeResource": {
                        "type": "string",
                        "minLength": 1,
                        "description": "for a renamed share (nvidia.com/gpu.shared): the name of the same devices "
                        "unshared",
                    },
                    "convertsAs": {
                        "type": "string",
                        "minLength": 1,
                        "description": "for MIG slices advertised under a whole-GPU name (migStrategy single): "
                        "the MIG profile's name the pods on these nodes convert as",
                    },
                },
            },
        },
        "workloads": {
            "type": "array",
            "description": "more kinds with pod specs, beside the built-in ones",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "podSpecPaths"],
                "properties": {
                    "apiGroup": {"type": "string", "description": "the kind's API group"},
                    "kind": {"type": "string", "minLength": 1, "description": "the kind"},
                    "podSpecPaths": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "description": "dotted paths to its pod specs; * matches every list item or map value",
                    },
                },
            },
        },
    },
}


class ConfigError(ValueError):
    """A configuration problem, with the location in the file already in the message."""


class NodeNamePolicy:
    __slots__ = ("mode", "scope")

    def __init__(
        self,
        mode: Literal["nodeSelector", "nodeAffinity"] = "nodeSelector",
        scope: Literal["claims", "all"] = "claims",
    ) -> None:
        self.mode = mode
        self.scope = scope


class Config(NamedTuple):
    """Made by parse_config (default_config for no file); changed copies by the with_* functions."""

    target: Target
    mappings: MappingTable
    node_name: NodeNamePolicy
    workloads: WorkloadTable
    strategy: Strategy
    # extendedResourceName -> the DeviceClass the target cluster serves it with (KEP-5004), as far
    # as the caller knows: the config file, DeviceClasses among the inputs, or the live cluster.
    served: Mapping[str, ServingClass]
    # The caller writes a DeviceClass for every name the strategy keeps (translator --device-classes).
    emits_device_classes: bool = False
    # A converted pod gets the toleration ExtendedResourceToleration gave it for the resource (engine/tolerations.py).
    resource_tolerations: bool = True


def _location(error: jsonschema.ValidationError) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _mapping_from_dict(raw: Mapping[str, Any], where: str) -> DeviceMapping:
    pattern = raw.get("pattern")
    compiled = None
    if pattern is not None:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{where}.pattern: not a valid regular expression: {exc}") from exc
    if raw.get("unconvertible") is None and not raw.get("deviceClassName"):
        raise ConfigError(f"{where}: needs deviceClassName (or unconvertible: <reason>)")
    groups = set(compiled.groupindex) if compiled else set()
    for text in (raw.get("deviceClassName", ""), *raw.get("selectors", ()), *raw.get("classSelectors", ())):
        for name in re.findall(r"\$\{(\w+)\}", text):
            if name not in groups:
                raise ConfigError(f"{where}: ${{{name}}} is not a named group of the pattern")
    return DeviceMapping(
        resource=raw.get("resource"),
        pattern=pattern,
        device_class_name=raw.get("deviceClassName"),
        selectors=tuple(raw.get("selectors", ())),
        config=tuple(OpaqueConfig(c["driver"], c["parameters"]) for c in raw.get("config", ())),
        request_name=raw.get("requestName"),
        unconvertible=raw.get("unconvertible"),
        keeps_unconverted=tuple(raw.get("keepsUnconverted", ())),
        class_selectors=tuple(raw.get("classSelectors", ())),
    )


def _check_values(raw: Mapping[str, Any], where: str) -> None:
    """What the apiserver would reject in the objects made from a mapping: class names, CEL syntax.

    `${group}` captures are stood in for by a plain word, valid wherever a capture can be used.
    """

    def filled(text: str) -> str:
        return re.sub(r"\$\{\w+\}", "x", text)

    if raw.get("deviceClassName"):
        problem = dns_subdomain_problem(filled(raw["deviceClassName"]))
        if problem:
            raise ConfigError(f"{where}.deviceClassName: {problem}")
    for field_name in ("selectors", "classSelectors"):
        for j, expression in enumerate(raw.get(field_name, ())):
            problem = cel_problem(filled(expression))
            if problem:
                raise ConfigError(f"{where}.{field_name}[{j}]: {problem}")


def _schema_errors(schema: dict[str, Any], data: Mapping[str, Any]) -> list[jsonschema.ValidationError]:
    import jsonschema  # only a config file needs it (an empty one is valid): start-up stays fast

    return sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: e.path)


def builtin_mappings() -> list[DeviceMapping]:
    return [_mapping_from_dict(raw, f"builtin[{i}]") for i, raw in enumerate(BUILTIN_MAPPINGS)]


def parse_config(
    data: Mapping[str, Any] | None,
    target_override: str | None = None,
    *,
    sections: Mapping[str, Mapping[str, Any]] | None = None,
) -> Config:
    """Validate a parsed config document and build a Config; raises ConfigError naming the field.

    `sections` adds the JSON Schemas of the file's other top-level sections (the webhook's), which
    are validated here with the rest, so a misspelt key anywhere is an error, but not interpreted.
    """
    data = data or {}
    if not isinstance(data, Mapping):
        raise ConfigError("(top level): the configuration must be a mapping")
    schema = CONFIG_SCHEMA
    if sections:
        schema = {**CONFIG_SCHEMA, "properties": {**CONFIG_SCHEMA["properties"], **sections}}
    errors = _schema_errors(schema, data) if data else []  # an empty mapping is valid
    if errors:
        raise ConfigError("; ".join(f"{_location(e)}: {e.message}" for e in errors[:5]))
    try:
        target = Target.parse(target_override or str(data.get("targetVersion", DEFAULT_TARGET)))
    except TargetVersionError as exc:
        raise ConfigError(f"targetVersion: {exc}") from exc
    user = [_mapping_from_dict(raw, f"mappings[{i}]") for i, raw in enumerate(data.get("mappings", ()))]
    for i, raw in enumerate(data.get("mappings", ())):
        _check_values(raw, f"mappings[{i}]")
    builtin = builtin_mappings() if data.get("builtinMappings", True) else []
    overridden = {m.key for m in user}
    mappings = MappingTable([*user, *(m for m in builtin if m.key not in overridden)])
    workloads = []
    for i, raw in enumerate(data.get("workloads", ())):
        for j, path in enumerate(raw["podSpecPaths"]):
            try:
                parse_path(path)
            except ValueError as exc:
                raise ConfigError(f"workloads[{i}].podSpecPaths[{j}]: {exc}") from exc
        workloads.append(WorkloadKind(raw.get("apiGroup", ""), raw["kind"], tuple(raw["podSpecPaths"])))
    node = data.get("nodeName", {})
    served = {
        raw["extendedResourceName"]: ServingClass(raw["name"], tuple(raw.get("selectors", ())))
        for raw in data.get("clusterDeviceClasses", ())
    }
    config = Config(
        target=target,
        mappings=mappings,
        node_name=NodeNamePolicy(mode=node.get("mode", "nodeSelector"), scope=node.get("scope", "claims")),
        workloads=WorkloadTable((*BUILTIN_WORKLOADS, *workloads)),
        strategy=Strategy(data.get("strategy", Strategy.AUTO)),
        served=served,
        resource_tolerations=bool(data.get("resourceTolerations", True)),
    )
    shared: dict[str, SharedDevices] = {}
    for raw in data.get("sharedDevices", ()):
        entry = SharedDevices(
            raw["reason"],
            raw["sharingNodes"],
            raw.get("otherNodes", ()),
            raw.get("shareCapacity"),
            raw.get("wholeResource"),
            raw.get("convertsAs"),
        )
        known = shared.get(raw["resource"])  # a name that means different things on different nodes
        shared[raw["resource"]] = known._replace(more=(*known.more, entry)) if known else entry
    return with_shared_devices(config, shared)


def with_served_classes(config: Config, served: Mapping[str, ServingClass]) -> Config:
    """`config` knowing more DeviceClasses that map extended resource names (they win over the file's)."""
    if not served:
        return config
    return config._replace(served={**config.served, **served})


def with_emitted_classes(config: Config) -> Config:
    """`config` for a caller that writes a DeviceClass for every name the strategy keeps, so every
    mapped name counts as served (see deviceclasses.build_device_class)."""
    return config._replace(emits_device_classes=True)


def at_admission(config: Config) -> Config:
    """`config` for the admission webhook: kube-apiserver's ExtendedResourceToleration plugin runs
    before it, so a pod already has the tolerations it gets (where the cluster enables the plugin)."""
    return config._replace(resource_tolerations=False)


def with_strategy(config: Config, strategy: str) -> Config:
    try:
        return config._replace(strategy=Strategy(strategy))
    except ValueError as exc:
        raise ConfigError(f"strategy: {strategy!r} is not one of {', '.join(s.value for s in Strategy)}") from exc


def leave_unconverted(config: Config, reasons: Mapping[str, str]) -> Config:
    """`config` with each named resource kept as it is and reported with its reason.

    Exact entries are looked up before patterns, so one entry per name also carves a name out
    of a pattern mapping.
    """
    return _with_overrides(
        config, [DeviceMapping(resource=name, unconvertible=reason) for name, reason in reasons.items()]
    )


def _with_overrides(config: Config, overrides: Sequence[DeviceMapping]) -> Config:
    """`config` with `overrides` looked up before its mappings (exact names before patterns)."""
    return config._replace(mappings=MappingTable([*overrides, *config.mappings.entries]))


class SharedDevices(NamedTuple):
    """What a cluster says about a name it shares: why no exclusive claim means it, the labels of the nodes
    that share it and of those that serve it whole, and the device capacity through which its DRA driver
    hands out one share per claim (None: the driver does not, so no claim means a share)."""

    reason: str
    nodes: Sequence[Mapping[str, str]]
    others: Sequence[Mapping[str, str]] = ()
    share_capacity: str | None = None
    whole_name: str | None = None  # the name of the devices unshared, for a renamed share (nvidia.com/gpu.shared)
    # a name whose conversion the request gets where the nodes advertise something else under it: the MIG
    # profile (`nvidia.com/mig-1g.10gb`) a MIG-single node advertises as `nvidia.com/gpu`
    converts_as: str | None = None
    # the nodes where the name means yet something else, each as its own entry (reason and others unused)
    more: tuple[SharedDevices, ...] = ()


def _label_sets(nodes: Sequence[Mapping[str, str]]) -> tuple[frozenset[tuple[str, str]], ...]:
    return tuple({frozenset((str(k), str(v)) for k, v in labels.items()) for labels in nodes})


def _conversion(config: Config, name: str, shared: SharedDevices) -> DeviceRequestSpec | None:
    """What a request for `name` becomes on nodes where it means `shared`: one share of the device, the
    device `converts_as` names, or None (no claim means it)."""
    resolved = config.mappings.resolve(name)
    device = config.mappings.resolve(shared.whole_name) if shared.whole_name else resolved
    if isinstance(device, DeviceRequestSpec) and shared.share_capacity:
        return device._replace(resource=name, capacity=((shared.share_capacity, "1"),))
    instead = config.mappings.resolve(shared.converts_as) if shared.converts_as else None
    return instead._replace(resource=name) if isinstance(instead, DeviceRequestSpec) else None


def with_shared_devices(config: Config, shares: Mapping[str, SharedDevices]) -> Config:
    """`config` knowing that the cluster shares the devices behind each name (time-slicing, MPS) on the
    nodes with the given labels: for a pod that can land there, a request is a share of a device. It
    becomes a claim for one share (`share_capacity`) when the pod can land only on sharing nodes, else it
    is kept, as an error with the reason. Pods that cannot land on a sharing node convert as before."""
    if not shares:
        return config
    overrides = []
    for name, shared in shares.items():
        resolved = config.mappings.resolve(name)
        otherwise = resolved if isinstance(resolved, DeviceRequestSpec) else None
        more = tuple((_label_sets(m.nodes), _conversion(config, name, m)) for m in shared.more)
        where = SharedOn(
            _label_sets(shared.nodes), otherwise, _label_sets(shared.others), _conversion(config, name, shared), more
        )
        overrides.append(DeviceMapping(resource=name, unconvertible=shared.reason, shared=where))
    return _with_overrides(config, overrides)


def default_config(target: str | None = None) -> Config:
    return parse_config({}, target)
