"""KubeRay derives Ray's resources from the Ray container's limits; claims leave nothing to derive.

KubeRay's operator (ray-operator/controllers/ray/common/pod.go, generateRayStartCommand and
addWellKnownAcceleratorResources) reads the first container of each group's pod template:
`num-gpus` comes from the first limit, by name, that ends in `gpu` or is an NVIDIA MIG profile,
and `--resources` gets `{"TPU": n}` from `google.com/tpu` or `{"neuron_cores": n}` from
`aws.amazon.com/neuroncore`. A group whose limits became claims therefore starts Ray with no GPUs.
The old counts are written into `rayStartParams`, exactly as KubeRay would have derived them,
unless the user set those parameters.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dra_migrate.engine.findings import Findings, json_path
from dra_migrate.engine.quantity import QuantityError, device_count
from dra_migrate.engine.workloads import iter_path, parse_path

# kind -> where the RayCluster spec sits (ray.io/v1)
CLUSTER_SPECS = {"RayCluster": "spec", "RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}
_CUSTOM_ACCELERATORS = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
_MIG = r"nvidia\.com/mig-\d+g\.\d+gb"  # compiled by re on first use: only Ray clusters need it


def _is_gpu(name: str) -> bool:
    """KubeRay's utils.IsGPUResourceKey."""
    return name.endswith("gpu") or re.search(_MIG, name) is not None


def _groups(obj: dict[str, Any]) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    path = CLUSTER_SPECS.get(str(obj.get("kind")))
    if path is None:
        return []
    found = list(iter_path(obj, (*parse_path(path), "headGroupSpec")))
    found += list(iter_path(obj, (*parse_path(path), "workerGroupSpecs", "*")))
    return found


def _ray_limits(group: dict[str, Any]) -> dict[str, Any]:
    template = group.get("template")
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    first = containers[0] if isinstance(containers, list) and containers else None
    resources = first.get("resources") if isinstance(first, dict) else None
    limits = resources.get("limits") if isinstance(resources, dict) else None
    return limits if isinstance(limits, dict) else {}


def _count(value: Any) -> int:
    try:
        return device_count(value)
    except QuantityError:
        return 0


def _derived(moved: dict[str, Any], params: dict[str, Any]) -> dict[str, str]:
    """What KubeRay would have added to `params` from the limits that became claims."""
    added: dict[str, str] = {}
    names = sorted(moved)
    if "num-gpus" not in params:
        gpu = next((n for n in names if _is_gpu(n) and _count(moved[n]) > 0), None)
        if gpu is not None:
            added["num-gpus"] = str(_count(moved[gpu]))
    try:
        resources = json.loads(str(params.get("resources", "{}")).strip("'\"` "))
    except ValueError:
        return added  # KubeRay itself fails on such a value: leave it to the user
    if not isinstance(resources, dict) or any(r in resources for r in _CUSTOM_ACCELERATORS.values()):
        return added
    accelerator = next((n for n in names if n in _CUSTOM_ACCELERATORS and _count(moved[n]) > 0), None)
    if accelerator is not None:
        resources[_CUSTOM_ACCELERATORS[accelerator]] = _count(moved[accelerator])
        added["resources"] = "'" + json.dumps(resources, separators=(",", ":")) + "'"
    return added


def keep_ray_resources(original: dict[str, Any], converted: dict[str, Any], findings: Findings) -> None:
    """Set rayStartParams in `converted` for every group whose Ray container lost accelerator limits."""
    before = dict(_groups(original))
    for path, group in _groups(converted):
        old_group = before.get(path)
        if old_group is None:
            continue
        remaining = _ray_limits(group)
        moved = {name: value for name, value in _ray_limits(old_group).items() if name not in remaining}
        params = group.get("rayStartParams")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            continue
        added = _derived(moved, params)
        if not added:
            continue
        group["rayStartParams"] = {**params, **added}
        for key, value in added.items():
            findings.info(
                "ray-start-params",
                json_path(*path, "rayStartParams", key),
                f"rayStartParams {key}: {value}, as KubeRay derived it from the Ray container's limits "
                f"({', '.join(sorted(moved))}), which are now claims",
            )
