"""KubeRay groups keep the accelerators Ray sees: rayStartParams get the counts KubeRay derived from limits."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra_migrate.engine import Config, convert


def _group(limits: dict[str, Any], params: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    group: dict[str, Any] = {
        "template": {
            "spec": {
                "containers": [
                    {"name": "ray", "image": "rayproject/ray", "resources": {"limits": {"cpu": "4", **limits}}},
                    {"name": "sidecar", "image": "busybox"},
                ]
            }
        },
        **extra,
    }
    if params is not None:
        group["rayStartParams"] = params
    return group


def _cluster_spec(worker_limits: dict[str, Any], worker_params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "headGroupSpec": _group({}, {"dashboard-host": "0.0.0.0"}),
        "workerGroupSpecs": [_group(worker_limits, worker_params, groupName="gpu", replicas=2)],
    }


def _ray(kind: str, cluster: dict[str, Any]) -> dict[str, Any]:
    spec = {"RayCluster": cluster, "RayJob": {"rayClusterSpec": cluster}, "RayService": {"rayClusterConfig": cluster}}
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "r", "namespace": "ml"}, "spec": spec[kind]}


def _cluster_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]
    cluster: dict[str, Any] = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec
    return cluster


@pytest.mark.parametrize("kind", ["RayCluster", "RayJob", "RayService"])
def test_converted_gpu_group_tells_ray_its_gpus(config: Config, kind: str) -> None:
    original = _ray(kind, _cluster_spec({"nvidia.com/gpu": 2}))
    untouched = copy.deepcopy(original)
    result = convert(original, config)
    assert original == untouched
    cluster = _cluster_of(result.object or {})
    worker = cluster["workerGroupSpecs"][0]
    assert worker["rayStartParams"] == {"num-gpus": "2"}
    assert "nvidia.com/gpu" not in worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert cluster["headGroupSpec"]["rayStartParams"] == {"dashboard-host": "0.0.0.0"}
    assert [f.rule for f in result.findings if f.rule == "ray-start-params"] == ["ray-start-params"]


def test_parameters_the_user_set_win(config: Config) -> None:
    result = convert(_ray("RayCluster", _cluster_spec({"nvidia.com/gpu": 2}, {"num-gpus": "1"})), config)
    assert _cluster_of(result.object or {})["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "1"}


def test_tpu_goes_into_the_resources_json_next_to_existing_resources(config: Config) -> None:
    params = {"resources": "'{\"custom\": 1}'"}
    result = convert(_ray("RayJob", _cluster_spec({"google.com/tpu": 4}, params)), config)
    worker = _cluster_of(result.object or {})["workerGroupSpecs"][0]
    assert worker["rayStartParams"] == {"resources": "'{\"custom\":1,\"TPU\":4}'"}


def test_mig_profiles_count_as_gpus_and_names_kept_on_the_device_plugin_derive_nothing(config: Config) -> None:
    result = convert(_ray("RayCluster", _cluster_spec({"nvidia.com/mig-1g.5gb": 3})), config)
    assert _cluster_of(result.object or {})["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "3"}
    kept = convert(_ray("RayCluster", _cluster_spec({"aws.amazon.com/neuroncore": 2, "nvidia.com/gpu": 1})), config)
    params = _cluster_of(kept.object or {})["workerGroupSpecs"][0]["rayStartParams"]
    assert params == {"num-gpus": "1"}  # neuroncore stays a limit: KubeRay still derives it itself
