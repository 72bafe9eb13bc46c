"""One model of each node: which stack serves it, the device plugin's config that applies to it, its MIG
strategy and profiles, what it shares and how, what it advertises and the devices of its ResourceSlices.
`plan`, `convert --cluster` and the webhook's configuration are all derived from these models.

What a node advertises is its `status.allocatable`: the device-plugin names with a count (renamed shares such
as `nvidia.com/gpu.shared` and per-partition AMD names included). Its DRA devices are those of the
ResourceSlices naming it. It is served both ways (over-admission) when a driver of its ResourceSlices is
the driver that the name it advertises maps to: the scheduler then counts the same devices twice.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_migrate.cluster.amdplugin import amd_plugins, partition_names
from dra_migrate.cluster.intelplugin import intel_node_sharing, intel_shares
from dra_migrate.cluster.nvidiaplugin import (
    PluginSource,
    Sharing,
    node_plugin,
    plugin_sources,
    single_mig_profile,
)
from dra_migrate.cluster.state import ClusterState, allocatable_of, labels_of, name_of
from dra_migrate.engine import DeviceRequestSpec, QuantityError, device_count, is_extended_resource

WHOLE_NVIDIA = "nvidia.com/gpu"
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")
_MIG_TYPE = "mig"


@dataclass(frozen=True)
class NodeModel:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    unschedulable: bool
    plugin: str | None  # the NVIDIA plugin and config key that serve the node ("DaemonSet x/y, config shared")
    mig_strategy: str  # none, single, mixed
    mig_profiles: tuple[str, ...]  # the MIG profiles it advertises (single: as nvidia.com/gpu)
    sharing: tuple[Sharing, ...]  # what it advertises as shares (time-slicing, mps, shared-dev-num)
    advertises: Mapping[str, int]  # device names in allocatable with their counts
    slices: Mapping[str, int]  # DRA driver -> devices its ResourceSlices publish for the node
    physical: Mapping[str, int]  # stack -> physical devices (shares divided, MIG slices not counted)
    over_admitted: tuple[str, ...] = ()  # drivers that serve the same devices through both stacks
    plugin_drivers: tuple[str, ...] = ()  # the DRA drivers of the names it advertises (where they would move)
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def stack(self) -> str:
        """device-plugin, dra, both (the same devices both ways), mixed (different devices), none."""
        if self.over_admitted:
            return "both"
        if self.advertises and self.slices:
            return "mixed"
        return "device-plugin" if self.advertises else "dra" if self.slices else "none"

    def share_of(self, name: str) -> Sharing | None:
        return next((s for s in self.sharing if s.advertised == name), None)

    def single_mig_profile(self) -> str | None:
        """The profile `nvidia.com/gpu` means here (MIG single), or None."""
        if self.mig_strategy == "single" and WHOLE_NVIDIA in self.advertises and self.mig_profiles:
            return self.mig_profiles[0]
        return None


@dataclass(frozen=True)
class ClusterNodes:
    """Every node once (a Node listed twice is one node), with the plugins' configs read once."""

    nodes: tuple[NodeModel, ...]
    plugins: tuple[PluginSource, ...]
    warnings: tuple[str, ...]

    def by_name(self) -> dict[str, NodeModel]:
        cached: dict[str, NodeModel] | None = self.__dict__.get("_by_name")
        if cached is None:
            cached = {n.name: n for n in self.nodes}
            object.__setattr__(self, "_by_name", cached)
        return cached

    def candidates(self, pod_spec: Mapping[str, Any]) -> tuple[NodeModel, ...]:
        """The nodes a pod spec's nodeName and nodeSelector leave (an index, not a scan: thousands of nodes
        times hundreds of workloads); affinity and taints are then checked on these."""
        pinned = pod_spec.get("nodeName")
        if pinned:
            found = self.by_name().get(str(pinned))
            return (found,) if found is not None else ()
        selector = pod_spec.get("nodeSelector")
        if not isinstance(selector, dict) or not selector:
            return self.nodes
        index = self._label_index()
        sets = [index.get((str(k), str(v)), frozenset()) for k, v in selector.items()]
        by_name = self.by_name()
        return tuple(by_name[name] for name in sorted(frozenset.intersection(*sets)))

    def _label_index(self) -> dict[tuple[str, str], frozenset[str]]:
        cached: dict[tuple[str, str], frozenset[str]] | None = self.__dict__.get("_index")
        if cached is None:
            index: dict[tuple[str, str], set[str]] = defaultdict(set)
            for node in self.nodes:
                for item in node.labels.items():
                    index[item].add(node.name)
            cached = {k: frozenset(v) for k, v in index.items()}
            object.__setattr__(self, "_index", cached)
        return cached


Resolver = Callable[[str], Any]  # a name -> DeviceRequestSpec, Unconvertible or None (config.mappings.resolve)


def quantity(value: Any) -> int:
    """A node's allocatable count (`8`, `1k`); 0 when it is not a whole number."""
    try:
        return device_count(value)
    except (QuantityError, TypeError):
        return 0


def driver_of(spec: DeviceRequestSpec, state: ClusterState) -> str:
    """The DRA driver behind a mapping: the cluster's DeviceClass of that name, else the mapping's own
    class selectors (`device.driver == "gpu.nvidia.com"` for mig.nvidia.com), else the class name."""
    from dra_migrate.engine import class_selectors

    expressions = [
        str(((selector or {}).get("cel") or {}).get("expression") or "")
        for obj in state.of("DeviceClass")
        if name_of(obj) == spec.device_class_name
        for selector in (obj.get("spec") or {}).get("selectors") or []
        if isinstance(selector, dict)
    ]
    for expression in [*expressions, *class_selectors(spec)]:
        match = _DRIVER.search(expression)
        if match:
            return match.group(1)
    return spec.device_class_name


def _slice_devices(state: ClusterState) -> dict[str, dict[str, tuple[int, int]]]:
    """node -> driver -> (devices, of which MIG devices), from the ResourceSlices naming a node."""
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for slice_ in state.of("ResourceSlice"):
        spec = slice_.get("spec") or {}
        if not spec.get("nodeName"):
            continue
        counts = out[str(spec["nodeName"])][str(spec.get("driver"))]
        for device in spec.get("devices") or []:
            counts[0] += 1
            attributes = (device or {}).get("attributes") or {} if isinstance(device, dict) else {}
            kind = attributes.get("type") if isinstance(attributes, dict) else None
            if isinstance(kind, dict) and kind.get("string") == _MIG_TYPE:
                counts[1] += 1
    return {node: {d: (c[0], c[1]) for d, c in drivers.items()} for node, drivers in out.items()}


def _advertised(
    allocatable: Mapping[str, Any], resolve: Resolver, shared: set[str], partitions: set[str]
) -> dict[str, int]:
    out = {}
    for name, value in allocatable.items():
        name = str(name)
        if not is_extended_resource(name) or quantity(value) <= 0:
            continue
        if name in shared or name in partitions or isinstance(resolve(name), DeviceRequestSpec):
            out[name] = quantity(value)
    return out


def _mig_profiles(advertised: Mapping[str, int], strategy: str, node: dict[str, Any]) -> tuple[str, ...]:
    if strategy == "single":
        profile = single_mig_profile(node)
        return (profile,) if profile else ()
    return tuple(sorted(n.removeprefix("nvidia.com/mig-") for n in advertised if n.startswith("nvidia.com/mig-")))


def node_model(
    node: dict[str, Any],
    state: ClusterState,
    plugins: list[PluginSource],
    resolve: Resolver,
    slices: Mapping[str, tuple[int, int]],
    extra_sharing: tuple[Sharing, ...] = (),
    partitions: tuple[str, ...] = (),
) -> NodeModel:
    name = name_of(node)
    served = node_plugin(plugins, node)
    sharing = served.sharing + extra_sharing
    shared = {s.advertised for s in sharing}
    advertises = _advertised(allocatable_of(node), resolve, shared, set(partitions))
    profiles = _mig_profiles(advertises, served.mig_strategy, node)
    problems = []
    if served.mig_strategy == "single" and WHOLE_NVIDIA in advertises and not profiles:
        problems.append(
            f"node {name}: MIG strategy single, and no MIG profile in its nvidia.com/gpu.product label: its "
            "nvidia.com/gpu are MIG devices of unknown profile"
        )
    physical: dict[str, int] = defaultdict(int)
    plugin_drivers: set[str] = set()
    for advertised, count in advertises.items():
        share = next((s for s in sharing if s.advertised == advertised), None)
        spec = resolve(share.resource if share else advertised)
        if isinstance(spec, DeviceRequestSpec):
            plugin_drivers.add(driver_of(spec, state))
        # under the mixed strategy nvidia.com/gpu are the GPUs without MIG; under single they are MIG devices
        mig = advertised.startswith("nvidia.com/mig-") or (
            advertised == WHOLE_NVIDIA and served.mig_strategy == "single" and bool(profiles)
        )
        if not mig:  # MIG slices are parts of GPUs, not GPUs
            physical["device-plugin"] += count // share.replicas if share else count
    over_admitted = tuple(sorted(plugin_drivers & set(slices)))
    for driver, (devices, migs) in slices.items():
        if driver not in over_admitted:  # devices served both ways are counted once, as the plugin's
            physical["dra"] += devices - migs
    taints = (node.get("spec") or {}).get("taints") or []
    return NodeModel(
        name=name,
        labels=labels_of(node),
        taints=tuple(t for t in taints if isinstance(t, dict)),
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
        plugin=served.where,
        mig_strategy=served.mig_strategy,
        mig_profiles=profiles,
        sharing=sharing,
        advertises=advertises,
        slices={d: c for d, (c, _) in slices.items()},
        physical=dict(physical),
        over_admitted=over_admitted,
        plugin_drivers=tuple(sorted(plugin_drivers)),
        problems=tuple(problems),
    )


def cluster_nodes(state: ClusterState, resolve: Resolver) -> ClusterNodes:
    """The model of every node; `resolve` maps a device-plugin name (the configuration's mappings)."""
    plugins = plugin_sources(state)
    intel = intel_shares(state)
    amd = amd_plugins(state)
    slices = _slice_devices(state)
    seen: dict[str, NodeModel] = {}
    warnings = [problem for source in plugins for problem in source.problems]
    for node in state.of("Node"):
        name = name_of(node)
        if name in seen:
            warnings.append(f"Node {name} is listed more than once in the cluster read; counted once")
            continue
        model = node_model(
            node,
            state,
            plugins,
            resolve,
            slices.get(name, {}),
            intel_node_sharing(intel, node),
            tuple(partition_names(amd, node)),
        )
        warnings.extend(model.problems)
        seen[name] = model
    nodes = tuple(sorted(seen.values(), key=lambda n: n.name))
    return ClusterNodes(nodes, tuple(plugins), tuple(warnings))
