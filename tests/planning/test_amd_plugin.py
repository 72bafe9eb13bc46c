"""The AMD GPU device plugin: no sharing, but its `resource_naming_strategy` (flag, or the AMD GPU
operator's DeviceConfig) decides the names; with `mixed` a partitioned node advertises one name per
partition type, which the plan reports when no mapping converts it. Its image is never taken for
NVIDIA's (both are called k8s-device-plugin)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from planning_support import api_node, cluster_state

from dra_migrate.cli import main
from dra_migrate.cluster.amdplugin import amd_plugins, partition_names
from dra_migrate.cluster.nvidiaplugin import plugin_sources
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.cluster.state import ClusterState

GPU_NODES = {"feature.node.kubernetes.io/amd-gpu": "true"}


def _daemon_set(args: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "amdgpu-device-plugin", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": GPU_NODES,
                    "containers": [{"name": "p", "image": "docker.io/rocm/k8s-device-plugin:1.31.0.6", "args": args}],
                    "volumes": [{"name": "config", "configMap": {"name": "amdgpu-config"}}],
                }
            }
        },
    }


def _device_config(naming: str) -> dict[str, Any]:
    return {
        "apiVersion": "amd.com/v1alpha1",
        "kind": "DeviceConfig",
        "metadata": {"name": "gpus", "namespace": "kube-amd-gpu"},
        "spec": {
            "selector": GPU_NODES,
            "devicePlugin": {"devicePluginArguments": {"resource_naming_strategy": naming}},
        },
    }


def _state(*objects: dict[str, Any]) -> ClusterState:
    return cluster_state(*objects, server_version="v1.37.2")


@pytest.mark.parametrize(
    ("source", "naming"),
    [
        (_daemon_set([]), "single"),
        (_daemon_set(["-resource_naming_strategy=mixed"]), "mixed"),
        (_daemon_set(["--resource_naming_strategy", "mixed"]), "mixed"),
        (_device_config("mixed"), "mixed"),
        (_device_config("single"), "single"),
    ],
    ids=["default", "flag=", "flag-value", "operator-mixed", "operator-single"],
)
def test_the_naming_strategy_in_its_forms(source: dict[str, Any], naming: str) -> None:
    (plugin,) = amd_plugins(_state(source))
    assert plugin.naming == naming and plugin.node_selector == GPU_NODES


def test_the_amd_image_is_not_the_nvidia_plugin() -> None:
    assert plugin_sources(_state(_daemon_set([]))) == []


def test_mixed_partition_names_come_from_the_nodes_it_runs_on() -> None:
    partitioned = api_node("mi300-0", GPU_NODES, {"amd.com/cpx_nps4": "64", "cpu": "96"})
    elsewhere = api_node("other-0", {}, {"amd.com/cpx_nps4": "64"})
    plugins = amd_plugins(_state(_device_config("mixed")))
    assert partition_names(plugins, partitioned) == ["amd.com/cpx_nps4"]
    assert partition_names(plugins, elsewhere) == []
    assert partition_names(amd_plugins(_state(_device_config("single"))), partitioned) == []


def test_the_plan_names_unmapped_partition_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = _state(
        _device_config("mixed"),
        api_node("mi300-0", GPU_NODES, {"amd.com/cpx_nps4": "64"}),
        api_node("mi300-1", GPU_NODES, {"amd.com/gpu": "8"}),
    )
    write_snapshot(state, tmp_path / "cluster")
    assert main(["plan", "--cluster", str(tmp_path / "cluster"), "--report", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (warning,) = [w for w in plan["warnings"] if "amd.com" in w]
    assert warning.startswith("amd.com/cpx_nps4 on mi300-0:") and "mixed naming" in warning
    assert (
        main(["plan", "--cluster", str(tmp_path / "cluster"), "--report", "json", "--config", str(_mapped(tmp_path))])
        == 0
    )
    assert not [w for w in json.loads(capsys.readouterr().out)["warnings"] if "amd.com" in w]


def _mapped(tmp_path: Path) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(
        "mappings:\n- resource: amd.com/cpx_nps4\n  deviceClassName: gpu.amd.com\n"
        '  selectors: [\'device.attributes["gpu.amd.com"].partitionProfile == "cpx_nps4"\']\n'
    )
    return config
