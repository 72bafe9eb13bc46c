"""Which device-plugin resource names become which DRA device requests.

A mapping entry names a resource exactly (`resource`) or by a full-match regular expression
(`pattern`) whose named groups can be used as `${group}` in the DeviceClass name and in CEL
selectors (the MIG profile, for example). Entries marked `unconvertible` are known names that
must stay as they are, with the reason reported to the user.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from dra_migrate.engine.memo import cached_when_hashable
from dra_migrate.engine.placement import selects

# Names that already reach DRA through the scheduler (KEP-5004 implicit names, docs/dra-api.md section 5).
IMPLICIT_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


class OpaqueConfig(NamedTuple):
    driver: str
    parameters: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"driver": self.driver, "parameters": json.loads(json.dumps(self.parameters))}


class DeviceMapping:
    """One entry of the mapping table, as written in a config file or built in (`pattern` already
    checked to compile: parse_config)."""

    __slots__ = (
        "class_selectors",
        "config",
        "device_class_name",
        "keeps_unconverted",
        "pattern",
        "request_name",
        "resource",
        "selectors",
        "shared",
        "unconvertible",
    )

    def __init__(
        self,
        resource: str | None = None,
        pattern: str | None = None,
        device_class_name: str | None = None,
        selectors: tuple[str, ...] = (),
        config: tuple[OpaqueConfig, ...] = (),
        request_name: str | None = None,
        unconvertible: str | None = None,
        keeps_unconverted: tuple[str, ...] = (),
        class_selectors: tuple[str, ...] = (),
        shared: SharedOn | None = None,
    ) -> None:
        self.resource = resource
        self.pattern = pattern
        self.device_class_name = device_class_name
        self.selectors = selectors
        self.config = config
        self.request_name = request_name
        self.unconvertible = unconvertible
        self.keeps_unconverted = keeps_unconverted
        # CEL a DeviceClass needs to pick this mapping's devices (what the driver's own class selects);
        # used for the DeviceClasses emitted for KEP-5004. Default: device.driver == "<deviceClassName>".
        self.class_selectors = class_selectors
        # The cluster shares the devices behind the name (time-slicing, MPS) on some nodes: there a request is
        # a share, and an exclusive claim would change its meaning. Kept, as an error, for the pods that can
        # land on those nodes (with_shared_devices).
        self.shared = shared

    @property
    def key(self) -> str:
        return self.resource if self.resource is not None else f"pattern:{self.pattern}"

    def match(self, name: str) -> dict[str, str] | None:
        if self.resource is not None:
            return {} if name == self.resource else None
        assert self.pattern is not None
        found = re.fullmatch(self.pattern, name)  # re's cache holds the compiled pattern
        return None if found is None else {k: v for k, v in found.groupdict().items() if v is not None}


class DeviceRequestSpec(NamedTuple):
    """What a converted resource asks DRA for; equal specs share a ResourceClaimTemplate."""

    resource: str
    device_class_name: str
    selectors: tuple[str, ...]
    config: tuple[OpaqueConfig, ...]
    request_name: str
    class_selectors: tuple[str, ...] = ()
    # capacity asked of each device, (name, quantity): a share of a device that several claims can hold
    capacity: tuple[tuple[str, str], ...] = ()

    def identity(self) -> str:
        """Canonical text of everything that makes two requests interchangeable."""
        return _identity(self)


# Specs come from the mapping's bounded cache, and the webhook asks for the same few per review.
@cached_when_hashable(maxsize=1024)
def _identity(spec: DeviceRequestSpec) -> str:
    identity: dict[str, Any] = {
        "class": spec.device_class_name,
        "selectors": list(spec.selectors),
        "config": [c.as_dict() for c in spec.config],
        "request": spec.request_name,
    }
    if spec.capacity:  # only when asked, so that the names of existing templates stay as they are
        identity["capacity"] = dict(spec.capacity)
    return json.dumps(identity, sort_keys=True, separators=(",", ":"))


NodeLabels = frozenset[tuple[str, str]]


class SharedOn(NamedTuple):
    """Where a cluster shares the devices behind a name: the label sets of the nodes that do and of the
    nodes that serve it otherwise (whole devices), how the name converts for a pod that cannot land on a
    sharing node, and, where the DRA driver publishes shares, for a pod that can land only there. `more`:
    the nodes where the name means yet something else (another kind of share, a MIG profile), each with its
    own conversion for a pod that can land only there."""

    nodes: tuple[NodeLabels, ...]
    otherwise: DeviceRequestSpec | None
    others: tuple[NodeLabels, ...] = ()
    share: DeviceRequestSpec | None = None
    more: tuple[tuple[tuple[NodeLabels, ...], DeviceRequestSpec | None], ...] = ()

    def for_pod(self, pod_spec: Mapping[str, Any]) -> DeviceRequestSpec | None:
        """The conversion for a pod with this spec (nodeSelector, nodeName, required node affinity), or
        None when no claim means its request."""
        groups = ((self.nodes, self.share), *self.more)
        reached = [spec for nodes, spec in groups if _reaches(nodes, pod_spec)]
        if not reached:
            return self.otherwise
        if len(reached) == 1 and reached[0] is not None and not _reaches(self.others, pod_spec):
            return reached[0]
        return None


def _reaches(nodes: tuple[NodeLabels, ...], pod_spec: Mapping[str, Any]) -> bool:
    """Whether a pod with this spec can land on one of the nodes with these labels."""
    return any(selects(pod_spec, dict(labels)) for labels in nodes)


class Unconvertible:
    __slots__ = ("keeps_unconverted", "reason", "resource", "shared")

    def __init__(
        self, resource: str, reason: str, keeps_unconverted: tuple[str, ...], shared: SharedOn | None = None
    ) -> None:
        self.resource = resource
        self.reason = reason
        self.keeps_unconverted = keeps_unconverted
        self.shared = shared


def _sub(template: str, captures: Mapping[str, str]) -> str:
    """Replace `${group}` by the capture (empty if the group did not take part); a lone `$` (a CEL regex
    anchor, say) stays as written."""
    return re.sub(r"\$\{(\w+)\}", lambda m: captures.get(m.group(1), ""), template)


def request_name_for(resource: str) -> str:
    """A DNS label from the last segment of a resource name: `nvidia.com/mig-1g.5gb` -> `mig-1g-5gb`."""
    tail = resource.rsplit("/", 1)[-1].lower()
    label = re.sub(r"[^a-z0-9-]+", "-", tail).strip("-")[:63].strip("-")
    return label or "devices"


_CACHE_MAX = 4096


class MappingTable:
    """Ordered lookup: user entries first (they override built-ins with the same key), then built-ins."""

    def __init__(self, entries: Sequence[DeviceMapping]) -> None:
        self.entries = tuple(entries)
        self._exact = {e.resource: e for e in reversed(self.entries) if e.resource is not None}
        self._patterns = [e for e in self.entries if e.pattern is not None]
        self._cache: dict[str, DeviceRequestSpec | Unconvertible | None] = {}

    def resolve(self, resource: str) -> DeviceRequestSpec | Unconvertible | None:
        if resource not in self._cache:
            if len(self._cache) >= _CACHE_MAX:  # names come from user input: keep the memory bounded
                self._cache.clear()
            self._cache[resource] = self._resolve(resource)
        return self._cache[resource]

    def _resolve(self, resource: str) -> DeviceRequestSpec | Unconvertible | None:
        entry = self._exact.get(resource)
        captures: dict[str, str] | None = {} if entry is not None else None
        if entry is None:
            for candidate in self._patterns:
                captures = candidate.match(resource)
                if captures is not None:
                    entry = candidate
                    break
        if entry is None or captures is None:
            return None
        if entry.unconvertible is not None:
            return Unconvertible(resource, entry.unconvertible, entry.keeps_unconverted, entry.shared)
        assert entry.device_class_name is not None
        return DeviceRequestSpec(
            resource=resource,
            device_class_name=_sub(entry.device_class_name, captures),
            selectors=tuple(_sub(s, captures) for s in entry.selectors),
            config=entry.config,
            request_name=entry.request_name or request_name_for(resource),
            class_selectors=tuple(_sub(s, captures) for s in entry.class_selectors),
        )

    def with_selectors(self, device_class: str, selectors: tuple[str, ...]) -> MappingTable:
        """This table, with `selectors` added to every request for `device_class` (a pod's own
        restriction on which devices it may get, such as HAMi's annotations)."""
        return _SelectingTable(self, device_class, selectors)

    def exact_names(self) -> list[str]:
        return [e.resource for e in self.entries if e.resource is not None and e.unconvertible is None]

    def patterns(self) -> list[str]:
        return [e.pattern for e in self.entries if e.pattern is not None and e.unconvertible is None]


class _SelectingTable(MappingTable):
    def __init__(self, base: MappingTable, device_class: str, selectors: tuple[str, ...]) -> None:
        super().__init__(base.entries)
        self._base, self._device_class, self._extra = base, device_class, selectors

    def resolve(self, resource: str) -> DeviceRequestSpec | Unconvertible | None:
        spec = self._base.resolve(resource)
        if isinstance(spec, DeviceRequestSpec) and spec.device_class_name == self._device_class:
            return spec._replace(selectors=(*spec.selectors, *self._extra))
        return spec


def is_extended_resource(name: str) -> bool:
    """Extended resources are domain-prefixed names outside `kubernetes.io/` (core validation rules)."""
    if "/" not in name or name.startswith("requests."):
        return False
    if name.startswith(IMPLICIT_DEVICE_CLASS_PREFIX):
        return True
    domain = name.split("/", 1)[0]
    return domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


_HAMI_SHARE = (
    "a HAMi vGPU share (memory/cores fraction) has no DRA device-count equivalent; "
    "the container's nvidia.com/gpu stays with it"
)

# The NVIDIA driver publishes full GPUs and MIG devices under one driver name (docs/field-notes.md).
_NVIDIA_TYPE = 'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "{type}"'

_MIG_PREFIX = r"nvidia\.com/mig-"
_MIG_BASE = r"(?:[1-8]c\.)?[1-8]g\.[1-9][0-9]{0,2}gb"

# Built-in table (docs/field-notes.md, "Device-plugin names and their DRA counterparts").
BUILTIN_MAPPINGS: tuple[dict[str, Any], ...] = (
    {
        "resource": "nvidia.com/gpu",
        "deviceClassName": "gpu.nvidia.com",
        "requestName": "gpu",
        "classSelectors": [_NVIDIA_TYPE.format(type="gpu")],
    },
    # MIG, mixed strategy: the device plugin advertises `mig-<profile>` with the profile's `+` made a `.`
    # (`1g.10gb+me` -> `mig-1g.10gb.me`), while the DRA driver's `profile` attribute keeps the `+`.
    # Profiles are `[<c>c.]<g>g.<gb>gb` plus at most one attribute (`+me`, `+me.all`, `+gfx`, `-me`);
    # slices are 1 to 8 and memory has at most 3 digits, so the patterns match a bounded set of names.
    {
        "pattern": _MIG_PREFIX + r"(?P<profile>" + _MIG_BASE + r"(?:-me)?)",
        "deviceClassName": "mig.nvidia.com",
        "selectors": ['device.attributes["gpu.nvidia.com"].profile == "${profile}"'],
        "requestName": "mig",
        "classSelectors": [_NVIDIA_TYPE.format(type="mig")],
    },
    {
        "pattern": _MIG_PREFIX + r"(?P<profile>" + _MIG_BASE + r")\.(?P<attribute>me|me\.all|gfx)",
        "deviceClassName": "mig.nvidia.com",
        "selectors": ['device.attributes["gpu.nvidia.com"].profile == "${profile}+${attribute}"'],
        "requestName": "mig",
        "classSelectors": [_NVIDIA_TYPE.format(type="mig")],
    },
    {
        "resource": "nvidia.com/gpu.shared",
        "unconvertible": "time-slicing replicas share one GPU; a replica has no DRA device-count equivalent",
    },
    {"resource": "nvidia.com/gpumem", "unconvertible": _HAMI_SHARE, "keepsUnconverted": ["nvidia.com/gpu"]},
    {"resource": "nvidia.com/gpucores", "unconvertible": _HAMI_SHARE, "keepsUnconverted": ["nvidia.com/gpu"]},
    {
        "resource": "nvidia.com/gpumem-percentage",
        "unconvertible": _HAMI_SHARE,
        "keepsUnconverted": ["nvidia.com/gpu"],
    },
    {"resource": "amd.com/gpu", "deviceClassName": "gpu.amd.com", "requestName": "gpu"},
    {
        "pattern": r"gpu\.intel\.com/(?P<driver>i915|xe)",
        "deviceClassName": "gpu.intel.com",
        "selectors": ['device.attributes["gpu.intel.com"].driver == "${driver}"'],
        "requestName": "gpu",
    },
    {"resource": "habana.ai/gaudi", "deviceClassName": "gaudi.intel.com", "requestName": "gaudi"},
    {"resource": "google.com/tpu", "deviceClassName": "tpu.google.com", "requestName": "tpu"},
    {"resource": "aws.amazon.com/neuron", "deviceClassName": "neuron.aws.com", "requestName": "neuron"},
    {"resource": "aws.amazon.com/neurondevice", "deviceClassName": "neuron.aws.com", "requestName": "neuron"},
    {
        "resource": "aws.amazon.com/neuroncore",
        "unconvertible": "a NeuronCore is a part of a Neuron device (2 to 8 per device): a core count is "
        "not a device count; map it in a config file once your driver publishes cores as devices",
    },
    {"resource": "vpc.amazonaws.com/efa", "deviceClassName": "efa.networking.k8s.aws", "requestName": "efa"},
    {
        "resource": "sgx.intel.com/epc",
        "unconvertible": "SGX EPC is a memory size, not a device count",
    },
)
