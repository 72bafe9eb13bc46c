"""One model of each node (cluster.nodes) and the plan derived from it: the plugin config that applies to a
node (Helm plugin beside a ClusterPolicy, the operator's `enabled`, MIG_STRATEGY over the file), its MIG
strategy and profile, its shares, what it advertises, its ResourceSlices, and physical device counts."""

from __future__ import annotations

from typing import Any

from planning_support import api_node, cluster_state

from dra_migrate.cluster.knowledge import cluster_config
from dra_migrate.cluster.nodes import cluster_nodes
from dra_migrate.configfile import load_config
from dra_migrate.engine import convert
from dra_migrate.planning.build import build_plan

TIME_SLICED = """\
version: v1
sharing:
  timeSlicing:
    renameByDefault: {rename}
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""
MIG_SINGLE_FILE = "version: v1\nflags:\n  migStrategy: single\n"


def helm_plugin(env: dict[str, str] | None = None, selector: dict[str, str] | None = None) -> dict[str, Any]:
    """The device plugin's DaemonSet as its Helm chart writes it, with the config-manager's ConfigMap."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": "nvidia"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": selector or {},
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
                            "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
                        }
                    ],
                    "volumes": [{"name": "available-configs", "configMap": {"name": "nvdp-configs"}}],
                }
            }
        },
    }


def configs(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvdp-configs", "namespace": "nvidia"},
        "data": data,
    }


def cluster_policy(enabled: bool | None, **spec: Any) -> dict[str, Any]:
    plugin: dict[str, Any] = {"config": {"name": "operator-configs", "default": "plain"}}
    if enabled is not None:
        plugin["enabled"] = enabled
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": plugin, **spec},
        "status": {"namespace": "gpu-operator"},
    }


def gpu_slice(node: str, devices: int, kind: str = "gpu") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{kind}"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"{kind}-{i}", "attributes": {"type": {"string": kind}}} for i in range(devices)],
        },
    }


def plan_of(*objects: dict[str, Any], consumable_shares: bool = False) -> dict[str, Any]:
    state = cluster_state(*objects, server_version="v1.37.2")
    plan, _ = build_plan(state, load_config(None, "1.37"), "pool", consumable_shares)
    return plan.to_json()


def test_a_cluster_policy_with_its_plugin_disabled_does_not_hide_a_helm_plugins_time_slicing() -> None:
    """The operator deploys no plugin when `devicePlugin.enabled: false`; the Helm chart's DaemonSet serves
    the nodes, and its time-slicing makes `nvidia.com/gpu: 1` a quarter of a GPU, never an exclusive claim."""
    node = api_node("ts-0", {"pool": "ts"}, {"nvidia.com/gpu": "16"})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "quarter", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    objects = (node, helm_plugin(), configs(default=TIME_SLICED.format(rename="false")), cluster_policy(False), pod)
    plan = plan_of(*objects)
    (pool,) = plan["pools"]
    assert [(s["advertised"], s["strategy"], s["replicas"]) for s in pool["sharing"]] == [
        ("nvidia.com/gpu", "time-slicing", 4)
    ]
    assert pool["gpus"] == {"device-plugin": 4}
    (workload,) = plan["workloads"]
    assert workload["path"] == "blocked" and "time-slicing" in workload["reasons"][0]
    state = cluster_state(*objects, server_version="v1.37.2")
    (model,) = cluster_nodes(state, load_config(None, "1.37").mappings.resolve).nodes
    assert model.plugin == "DaemonSet nvidia/nvdp-nvidia-device-plugin, config default"


def test_the_operators_plugin_runs_on_the_nodes_it_labels_and_its_config_wins_there() -> None:
    deployed = api_node("op-0", {"pool": "op", "nvidia.com/gpu.deploy.device-plugin": "true"}, {"nvidia.com/gpu": "8"})
    helm_only = api_node("helm-0", {"pool": "helm", "nvidia.com/gpu.deploy.device-plugin": "false"}, {})
    helm_only["status"]["allocatable"] = {"nvidia.com/gpu": "8"}
    operator_configs = {
        **configs(plain="version: v1\n"),
        "metadata": {"name": "operator-configs", "namespace": "gpu-operator"},
    }
    objects = (
        deployed,
        helm_only,
        cluster_policy(None),
        operator_configs,
        helm_plugin(),
        configs(default=TIME_SLICED.format(rename="false")),
    )
    state = cluster_state(*objects, server_version="v1.37.2")
    models = cluster_nodes(state, load_config(None, "1.37").mappings.resolve).by_name()
    assert models["op-0"].plugin == "ClusterPolicy cluster-policy, config plain" and models["op-0"].sharing == ()
    assert models["helm-0"].plugin == "DaemonSet nvidia/nvdp-nvidia-device-plugin, config default"
    assert [s.replicas for s in models["helm-0"].sharing] == [4]


def test_mig_strategy_single_comes_from_the_environment_over_the_file_and_the_profile_from_the_product() -> None:
    """MIG_STRATEGY (Helm's migStrategy, the operator's spec.mig.strategy) wins over flags.migStrategy;
    a `single` node's nvidia.com/gpu are MIG devices of the profile in its product label."""
    labels = {"pool": "a100", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}
    node = api_node("mig-0", labels, {"nvidia.com/gpu": "7"})
    state = cluster_state(
        node, helm_plugin({"MIG_STRATEGY": "single"}), configs(default="version: v1\n"), server_version="v1.37.2"
    )
    (model,) = cluster_nodes(state, load_config(None, "1.37").mappings.resolve).nodes
    assert (model.mig_strategy, model.mig_profiles, model.single_mig_profile()) == ("single", ("1g.10gb",), "1g.10gb")
    assert model.physical == {}  # seven MIG slices, not seven GPUs
    policy = cluster_policy(None, mig={"strategy": "mixed"})
    state = cluster_state(node, policy, server_version="v1.37.2")
    state.add(
        [{**configs(plain=MIG_SINGLE_FILE), "metadata": {"name": "operator-configs", "namespace": "gpu-operator"}}]
    )
    resolve = load_config(None, "1.37").mappings.resolve
    (model,) = cluster_nodes(state, resolve).nodes
    assert model.mig_strategy == "mixed"  # the ClusterPolicy's strategy over its config file's
    mixed = api_node("mig-1", {"pool": "a100"}, {"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "7"})
    (model,) = cluster_nodes(cluster_state(mixed, policy, server_version="v1.37.2"), resolve).nodes
    assert model.mig_profiles == ("1g.10gb",)
    assert model.physical == {"device-plugin": 4}  # under mixed, nvidia.com/gpu are the GPUs without MIG


def test_over_admission_is_found_for_renamed_shares_and_devices_are_counted_once() -> None:
    """`nvidia.com/gpu.shared` (renameByDefault) and a ResourceSlice for the same GPUs: served both ways."""
    node = api_node("ts-0", {"pool": "ts"}, {"nvidia.com/gpu.shared": "8"})
    objects = (node, helm_plugin(), configs(default=TIME_SLICED.format(rename="true")), gpu_slice("ts-0", 2))
    plan = plan_of(*objects)
    (pool,) = plan["pools"]
    assert pool["stack"] == "both" and pool["both"] == ["ts-0"]
    assert pool["gpus"] == {"device-plugin": 2}  # 8 shares of 2 GPUs, not 2 more through DRA
    assert plan["errors"] and "ts-0" in plan["errors"][0]


def test_a_node_listed_twice_is_one_node_and_1k_is_a_thousand() -> None:
    node = api_node("big-0", {"pool": "big"}, {"nvidia.com/gpu": "1k"})
    plan = plan_of(node, node)
    (pool,) = plan["pools"]
    assert pool["nodes"] == ["big-0"]
    assert pool["device_plugin"] == {"nvidia.com/gpu": 1000} and pool["gpus"] == {"device-plugin": 1000}
    assert any("big-0 is listed more than once" in w for w in plan["warnings"])


def test_dra_mig_devices_are_not_counted_as_gpus() -> None:
    plan = plan_of(api_node("dra-0", {"pool": "dra"}, {}), gpu_slice("dra-0", 2), gpu_slice("dra-0", 7, "mig"))
    (pool,) = plan["pools"]
    assert pool["dra"] == {"gpu.nvidia.com": 9} and pool["gpus"] == {"dra": 2}


def test_convert_with_the_cluster_knows_the_node_models() -> None:
    """convert --cluster reads the same models: the Helm plugin's time-slicing beside a disabled
    ClusterPolicy keeps a pod that can land there on the device plugin."""
    node = api_node("ts-0", {"pool": "ts"}, {"nvidia.com/gpu": "16"})
    state = cluster_state(
        node,
        helm_plugin(),
        configs(default=TIME_SLICED.format(rename="false")),
        cluster_policy(False),
        server_version="v1.37.2",
    )
    config = cluster_config(state, load_config(None, "1.37"))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    result = convert(pod, config)
    assert not result.conversions and any(f.rule == "shared-device" for f in result.findings)
