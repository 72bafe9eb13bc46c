"""The AMD GPU device plugin (ROCm/k8s-device-plugin) shares nothing: each GPU, or each compute partition
of a partitioned GPU, is one device. Its `resource_naming_strategy` flag (`spec.devicePlugin.
devicePluginArguments` of the AMD GPU operator's DeviceConfig, whose `spec.selector` picks the nodes)
decides the names (cmd/k8s-device-plugin/main.go, getResourceList): `single` (the default) advertises
every device as `amd.com/gpu`; `mixed` advertises a partitioned node's devices under one name per
partition type, `amd.com/<compute>_<memory>` (`amd.com/cpx_nps4`), and an unpartitioned one's as
`amd.com/gpu`."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from dra_migrate.cluster.state import ClusterState, allocatable_of, labels_of, name_of, namespace_of

WHOLE = "amd.com/gpu"
_IMAGE = "rocm/k8s-device-plugin"
_FLAG = re.compile(r"^--?resource_naming_strategy(?:=(\w+))?$")


class AmdPlugin(NamedTuple):
    where: str  # "DaemonSet kube-amd-gpu/amdgpu-device-plugin", "DeviceConfig kube-amd-gpu/default"
    node_selector: Mapping[str, str]
    naming: str  # single, mixed


def is_amd_plugin(image: str) -> bool:
    return _IMAGE in image


def _naming(args: list[Any]) -> str:
    for index, arg in enumerate(args):
        match = _FLAG.match(str(arg))
        if match is not None:
            return match.group(1) or (str(args[index + 1]) if index + 1 < len(args) else "single")
    return "single"


def _selector(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _daemon_sets(state: ClusterState) -> Iterator[AmdPlugin]:
    for daemon_set in state.of("DaemonSet"):
        spec = ((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in spec.get("containers") or []:
            if isinstance(container, dict) and is_amd_plugin(str(container.get("image") or "")):
                args = [*(container.get("command") or []), *(container.get("args") or [])]
                where = f"DaemonSet {namespace_of(daemon_set)}/{name_of(daemon_set)}"
                yield AmdPlugin(where, _selector(spec.get("nodeSelector")), _naming(args))


def _operator(state: ClusterState) -> Iterator[AmdPlugin]:
    for config in state.of("DeviceConfig"):
        spec = config.get("spec") or {}
        arguments = ((spec.get("devicePlugin") or {}).get("devicePluginArguments")) or {}
        naming = str(arguments.get("resource_naming_strategy") or "single") if isinstance(arguments, dict) else "single"
        yield AmdPlugin(
            f"DeviceConfig {namespace_of(config)}/{name_of(config)}", _selector(spec.get("selector")), naming
        )


def amd_plugins(state: ClusterState) -> list[AmdPlugin]:
    """The operator's DaemonSets are read through its DeviceConfigs."""
    return list(_operator(state)) or list(_daemon_sets(state))


def partition_names(plugins: list[AmdPlugin], node: dict[str, Any]) -> list[str]:
    """The per-partition-type names a node advertises because a `mixed` plugin runs there."""
    labels = labels_of(node)
    if not any(p.naming == "mixed" and all(labels.get(k) == v for k, v in p.node_selector.items()) for p in plugins):
        return []
    allocatable = allocatable_of(node)
    return sorted(str(n) for n in allocatable if str(n).startswith("amd.com/") and str(n) != WHOLE)
