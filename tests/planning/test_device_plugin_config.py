"""The NVIDIA device plugin's configuration as its config-manager and api/config/v1 read it: which key a
node gets, and what sharing means for the names it advertises."""

from __future__ import annotations

from typing import Any

import pytest

from dra_migrate.cluster.nvidiaplugin import (
    PluginConfig,
    Sharing,
    config_for,
    labelled_sharing,
    node_sharing,
    parse_config,
    plugin_sources,
)
from dra_migrate.cluster.state import ClusterState


def _sharing(section: str, extra: str = "", resource: str = "") -> str:
    head = f"version: v1\nsharing:\n  {section}:\n{extra}"
    return head + f"    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n{resource}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_sharing("timeSlicing"), Sharing("time-slicing", 4, "nvidia.com/gpu", False, "nvidia.com/gpu")),
        (
            _sharing("timeSlicing", "    renameByDefault: true\n"),
            Sharing("time-slicing", 4, "nvidia.com/gpu.shared", False, "nvidia.com/gpu"),
        ),
        (
            # the plugin ignores a resource's own rename (v0.20.0 DisableResourceNamingInConfig)
            _sharing("timeSlicing", "", "      rename: nvidia.com/gpu-quarter\n"),
            Sharing("time-slicing", 4, "nvidia.com/gpu", False, "nvidia.com/gpu"),
        ),
        (
            _sharing("timeSlicing", "    failRequestsGreaterThanOne: true\n"),
            Sharing("time-slicing", 4, "nvidia.com/gpu", True, "nvidia.com/gpu"),
        ),
        (_sharing("mps"), Sharing("mps", 4, "nvidia.com/gpu", True, "nvidia.com/gpu")),
    ],
    ids=["time-slicing", "rename-by-default", "rename-ignored", "fail-more-than-one", "mps"],
)
def test_a_shared_name_is_what_the_node_advertises(text: str, expected: Sharing) -> None:
    assert parse_config(text).sharing == (expected,)


def test_one_replica_shares_nothing_and_mig_strategy_is_read() -> None:
    config = parse_config(
        "version: v1\nflags: {migStrategy: mixed}\n"
        + _sharing("timeSlicing").replace("version: v1\n", "").replace("replicas: 4", "replicas: 1")
    )
    assert config == PluginConfig("mixed", ())


@pytest.mark.parametrize("replicas", ["0", "-1", "four", "true"])
def test_a_bad_replica_count_names_the_field(replicas: str) -> None:
    with pytest.raises(ValueError, match=r"sharing.timeSlicing.resources\[0\].replicas"):
        parse_config(_sharing("timeSlicing").replace("replicas: 4", f"replicas: {replicas}"))


def _node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


def _state(*objects: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    state.add(objects)
    return state


def _config_map(namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def _plugin_daemon_set(**pod_spec: Any) -> dict[str, Any]:
    """The plugin's DaemonSet as its Helm chart deploys it, mounting the ConfigMap `configs`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    **pod_spec,
                    "containers": [{"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}],
                    "volumes": [{"name": "available-configs", "configMap": {"name": "configs"}}],
                }
            }
        },
    }


SHARED = _sharing("timeSlicing")
PLAIN = "version: v1\n"


def test_the_gpu_operator_names_the_config_in_its_cluster_policy() -> None:
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}},
        "status": {"namespace": "gpu-operator"},
    }
    state = _state(policy, _config_map("gpu-operator", "time-slicing-config", {"any": SHARED, "none": PLAIN}))
    (source,) = plugin_sources(state)
    assert source.where == "ClusterPolicy cluster-policy" and not source.problems
    assert config_for(source, _node("a")) == ("any", parse_config(SHARED))
    assert config_for(source, _node("b", {"nvidia.com/device-plugin.config": "none"}))[0] == "none"


def test_without_a_default_the_key_named_default_then_the_only_key() -> None:
    daemon_set = _plugin_daemon_set()
    named = plugin_sources(_state(daemon_set, _config_map("kube-system", "configs", {"default": SHARED, "x": PLAIN})))[
        0
    ]
    assert config_for(named, _node("a"))[0] == "default"
    only = plugin_sources(_state(daemon_set, _config_map("kube-system", "configs", {"x": SHARED})))[0]
    assert config_for(only, _node("a"))[0] == "x"
    two = plugin_sources(_state(daemon_set, _config_map("kube-system", "configs", {"x": SHARED, "y": PLAIN})))[0]
    assert config_for(two, _node("a")) == (None, None)  # the plugin starts with an empty config
    missing = plugin_sources(_state(daemon_set))[0]
    assert missing.problems == ("ConfigMap kube-system/configs is not in the cluster (or was not read)",)


def test_without_the_config_the_feature_discovery_labels_tell() -> None:
    labels = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.count": "2"}
    assert labelled_sharing(_node("a", labels)) == (Sharing("mps", 4, "nvidia.com/gpu", True, "nvidia.com/gpu"),)
    assert node_sharing([], _node("b", {"nvidia.com/gpu.replicas": "1"})) == ()


def test_a_node_the_plugin_does_not_run_on_or_that_advertises_no_gpus_shares_nothing() -> None:
    """The plugin's DaemonSet selects `deploy.device-plugin=true` nodes; a DRA node of the same pool
    (labelled false, no `nvidia.com/gpu` in its allocatable) is not time-sliced by its config."""
    daemon_set = _plugin_daemon_set(nodeSelector={"nvidia.com/gpu.deploy.device-plugin": "true"})
    (source,) = plugin_sources(_state(daemon_set, _config_map("kube-system", "configs", {"default": SHARED})))

    def node(deployed: str, allocatable: dict[str, str]) -> dict[str, Any]:
        found = _node("n", {"nvidia.com/gpu.deploy.device-plugin": deployed})
        return {**found, "status": {"allocatable": {"cpu": "8", **allocatable}}}

    shared = (Sharing("time-slicing", 4, "nvidia.com/gpu", False, "nvidia.com/gpu"),)
    assert node_sharing([source], node("true", {"nvidia.com/gpu": "8"})) == shared
    assert node_sharing([source], node("false", {})) == ()
    assert node_sharing([source], node("true", {})) == ()  # selected, but the plugin advertises nothing yet
    assert node_sharing([source], _node("n", {"nvidia.com/gpu.deploy.device-plugin": "true"})) == shared  # no status
