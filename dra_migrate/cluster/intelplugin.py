"""The Intel GPU device plugin's sharing: `-shared-dev-num N` ("number of containers sharing the same
GPU device", intel/intel-device-plugins-for-kubernetes cmd/gpu_plugin; `spec.sharedDevNum` of the
operator's GpuDevicePlugin) advertises each GPU N times under its own name (`gpu.intel.com/i915`,
`gpu.intel.com/xe`), so with N > 1 a request for 1 is a share, like NVIDIA's time-slicing."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from dra_migrate.cluster.nvidiaplugin import Sharing
from dra_migrate.cluster.state import ClusterState, allocatable_of, labels_of

NAMES = ("gpu.intel.com/i915", "gpu.intel.com/xe")
_FLAG = re.compile(r"^--?shared-dev-num(?:=(\d+))?$")


class IntelShare(NamedTuple):
    node_selector: Mapping[str, str]  # the nodes the plugin runs on
    replicas: int


def _selector(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _shared_dev_num(args: list[Any]) -> int:
    for index, arg in enumerate(args):
        match = _FLAG.match(str(arg))
        if match is None:
            continue
        value = match.group(1) or (str(args[index + 1]) if index + 1 < len(args) else "")
        return int(value) if value.isdigit() else 1
    return 1


def _daemon_sets(state: ClusterState) -> Iterator[IntelShare]:
    for daemon_set in state.of("DaemonSet"):
        spec = ((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in spec.get("containers") or []:
            if isinstance(container, dict) and "intel-gpu-plugin" in str(container.get("image") or ""):
                args = [*(container.get("command") or []), *(container.get("args") or [])]
                yield IntelShare(_selector(spec.get("nodeSelector")), _shared_dev_num(args))


def _operator(state: ClusterState) -> Iterator[IntelShare]:
    for plugin in state.of("GpuDevicePlugin"):
        spec = plugin.get("spec") or {}
        number = spec.get("sharedDevNum")
        replicas = number if isinstance(number, int) and not isinstance(number, bool) else 1
        yield IntelShare(_selector(spec.get("nodeSelector")), replicas)


def intel_shares(state: ClusterState) -> list[IntelShare]:
    """Plugins that share (N > 1); the operator's DaemonSets are read through its GpuDevicePlugin."""
    found = list(_operator(state)) or list(_daemon_sets(state))
    return [share for share in found if share.replicas > 1]


def intel_node_sharing(shares: list[IntelShare], node: dict[str, Any]) -> tuple[Sharing, ...]:
    labels = labels_of(node)
    allocatable = allocatable_of(node)
    for share in shares:
        if all(labels.get(k) == v for k, v in share.node_selector.items()):
            return tuple(
                Sharing("shared-dev-num", share.replicas, name, False, name) for name in NAMES if name in allocatable
            )
    return ()
