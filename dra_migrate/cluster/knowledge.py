"""What the node models tell a conversion (`convert --cluster`, the webhook's `sharedDevices`, `plan`): the
DeviceClasses the cluster serves names with (KEP-5004), and the names that mean something else than whole
devices on some nodes: a share (time-slicing, MPS, Intel's shared-dev-num) or, under the NVIDIA device
plugin's MIG strategy `single`, a MIG device of the node's profile. A pod whose nodeSelector lets it land
only where a name means one thing converts to that thing (a whole device, a share where the DRA driver
hands them out, the MIG profile's device); one that can land where it means different things is kept,
with the reason."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from dra_migrate.cluster.nodes import WHOLE_NVIDIA, ClusterNodes, NodeModel, cluster_nodes
from dra_migrate.cluster.nvidiadra import shares_for
from dra_migrate.cluster.state import ClusterState
from dra_migrate.engine import (
    Config,
    SharedDevices,
    Target,
    serving_classes,
    with_served_classes,
    with_shared_devices,
)

MIG_PREFIX = "nvidia.com/mig-"


class Meaning(NamedTuple):
    """What a request for a name means on a node other than whole devices."""

    kind: str  # "share" or "mig"
    strategy: str  # time-slicing, mps, shared-dev-num; the MIG profile for "mig"
    replicas: int
    resource: str  # the unshared name (for a renamed share), or the MIG profile's own name

    def text(self) -> str:
        if self.kind == "mig":
            return f"a MIG device of profile {self.strategy} (MIG strategy single)"
        return f"a share of a device ({self.strategy}, {self.replicas} per device)"


def meaning_on(node: NodeModel, name: str) -> Meaning | None:
    share = node.share_of(name)
    if share is not None:
        return Meaning("share", share.strategy, share.replicas, share.resource)
    profile = node.single_mig_profile() if name == WHOLE_NVIDIA else None
    if profile is not None:
        return Meaning("mig", profile, 1, MIG_PREFIX + profile.replace("+", "."))
    return None


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (" and others" if len(names) > 3 else "")


def _reason(name: str, where: dict[Meaning, list[str]], capacity: str | None, why_not: str) -> str:
    said = "; ".join(f"on {_few(nodes)} a request is {m.text()}" for m, nodes in sorted(where.items()))
    if len(where) > 1:
        return (
            f"{name} means different things: {said}; a pod that can land on more than one kind of these nodes, or "
            "on nodes where no claim means it, keeps it: select one kind of node (nodeSelector)"
        )
    (meaning,) = where
    if meaning.kind == "mig":
        return (
            f"{said}, not a whole GPU; a pod that can land only there gets a claim for that profile "
            "(mig.nvidia.com), but this one can also land on nodes where it means whole devices: select one kind "
            "(nodeSelector)"
        )
    nodes = where[meaning]
    reason = (
        f"the device plugin shares it ({meaning.strategy}, {meaning.replicas} per device) on {_few(nodes)}: a "
        f"request there is a share of a device, a claim gets whole devices (up to {meaning.replicas} times as many); "
    )
    if capacity:
        return reason + (
            "a pod that can land only there gets a claim for one share, but this one can also land on nodes "
            "that serve whole devices: select one kind (nodeSelector)"
        )
    return reason + f"keep it on the device plugin, or select nodes that do not share it (nodeSelector); {why_not}"


def shared_names(nodes: ClusterNodes, target: Target, consumable_shares: bool = False) -> dict[str, SharedDevices]:
    """Every name that means something else than whole devices on some nodes, with the labels of those
    nodes and of the nodes that serve it whole, and what a pod that can land only on the former gets."""
    found: dict[str, dict[Meaning, list[NodeModel]]] = defaultdict(lambda: defaultdict(list))
    for node in nodes.nodes:
        for name in node.advertises:
            meaning = meaning_on(node, name)
            if meaning is not None:
                found[name][meaning].append(node)
    out = {}
    for name, where in sorted(found.items()):
        special = {n.name for group in where.values() for n in group}
        wholes = {m.resource for m in where if m.kind == "share"} | {name}
        others = [
            dict(n.labels)
            for n in nodes.nodes
            if n.name not in special and (any(w in n.advertises for w in wholes) or n.slices)
        ]
        named = {m: sorted(n.name for n in group) for m, group in where.items()}
        entries = []
        for meaning, group in sorted(where.items()):
            capacity, why_not, converts_as = None, "", None
            if meaning.kind == "share":
                capacity, why_not = shares_for(meaning.resource, meaning.strategy, target, consumable_shares)
            else:
                converts_as = meaning.resource
            reason = _reason(name, named if len(where) > 1 else {meaning: named[meaning]}, capacity, why_not)
            whole = meaning.resource if meaning.kind == "share" and meaning.resource != name else None
            entries.append(SharedDevices(reason, [dict(n.labels) for n in group], others, capacity, whole, converts_as))
        out[name] = entries[0]._replace(more=tuple(e._replace(others=()) for e in entries[1:]))
    return out


def served_config(state: ClusterState, config: Config) -> Config:
    """`config` knowing the DeviceClasses the cluster serves names with (KEP-5004)."""
    served = serving_classes(state.of("DeviceClass"))
    return with_served_classes(config, {name: classes[0] for name, classes in served.items()})


def cluster_config(state: ClusterState, config: Config, consumable_shares: bool = False) -> Config:
    """`config` as the cluster decides it: the DeviceClasses it serves names with, and the names that mean
    shares or MIG devices on some nodes (never whole devices for a pod that can land there)."""
    nodes = cluster_nodes(state, config.mappings.resolve)
    shares = shared_names(nodes, config.target, consumable_shares)
    return with_shared_devices(served_config(state, config), shares)


def knowledge_gaps(state: ClusterState, nodes: ClusterNodes) -> list[str]:
    """What the cluster read cannot tell a conversion: a device plugin that shares devices, with no Node
    to say where (every request then converts as whole devices)."""
    if nodes.nodes:
        return []
    sharing = sorted(
        f"{share.advertised} ({share.strategy}, {share.replicas} per device; {source.where}, config {key})"
        for source in nodes.plugins
        for key, config in source.configs.items()
        for share in config.sharing
    )
    if not sharing:
        return []
    return [
        f"the device plugin's config shares {', '.join(sharing)}, but the cluster read has no Node: which nodes "
        "share is unknown, so their requests convert as whole devices; read the cluster with its Nodes"
    ]
