"""Paths as they are after the plan's own DeviceClass step: from there the webhook finds the written classes in
the cluster and the scheduler serves their names from DRA (KEP-5004), so the plan decides with them and says
which paths the step changes. A name that means MIG slices or shares on some nodes gets no class, and a class
the cluster already has for it never serves a pod that lands only there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from planning_support import api_node, cluster_state, device_class
from test_node_model import configs, helm_plugin
from test_plan_defects import MIG_LABELS, MPS, TIME_SLICED, deployment

from dra_migrate.configfile import load_config
from dra_migrate.engine import convert
from dra_migrate.planning.build import build_plan
from dra_migrate.planning.text import render_text
from dra_migrate.planning.write import DEVICE_CLASSES, WEBHOOK, manifests

GPU_EXTENDED = device_class("gpu-extended", "gpu.nvidia.com", "nvidia.com/gpu")


def _plan(*objects: dict[str, Any], release: str = "1.37", config_file: str | None = None) -> dict[str, Any]:
    state = cluster_state(*objects, server_version=f"v{release}.2")
    config = load_config(config_file, release)
    plan, stages = build_plan(state, config, "pool")
    files = manifests(plan, config, stages)
    return {"plan": plan, "json": plan.to_json(), "files": files}


def _paths(plan: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {w["name"]: (w["path_before_classes"], w["path"]) for w in plan["workloads"]}


def _written_names(files: dict[str, str]) -> list[str]:
    if DEVICE_CLASSES not in files:
        return []
    return sorted(c["spec"]["extendedResourceName"] for c in yaml.safe_load_all(files[DEVICE_CLASSES]) if c)


def test_a_whole_gpu_workload_is_left_to_kep_5004_once_the_plans_class_exists(tmp_path: Path) -> None:
    """1.37: the plan writes nvidia.com-gpu, so the pinned workload keeps its request (KEP-5004); the class
    step names the change, and the stage configuration decides as the plan does."""
    got = _plan(api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}), deployment("train", {"pool": "whole"}))
    assert _written_names(got["files"]) == ["nvidia.com/gpu"]
    assert _paths(got["json"]) == {"train": ("claims", "kep-5004")}
    step = next(s for s in got["json"]["steps"] if s["action"].startswith("apply the DeviceClasses"))
    assert "Deployment ml/train claims -> kep-5004" in step["check"]
    assert "kep-5004 once the plan's DeviceClasses are applied (claims before)" in render_text(got["plan"])
    webhook = tmp_path / WEBHOOK
    webhook.write_text(got["files"][WEBHOOK])
    result = convert(deployment("train", {"pool": "whole"}), load_config(str(webhook), "1.37"))
    assert not result.conversions and [s.resource for s in result.extended] == ["nvidia.com/gpu"]


def test_on_1_34_no_class_is_written_and_paths_stay_claims() -> None:
    got = _plan(
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        deployment("train", {"pool": "whole"}),
        release="1.34",
    )
    assert _written_names(got["files"]) == []
    assert _paths(got["json"]) == {"train": ("", "claims")}
    assert not any(s["action"].startswith("apply the DeviceClasses") for s in got["json"]["steps"])


def test_no_class_for_a_name_a_pool_means_as_mig_slices_or_shares() -> None:
    """MIG single, time-slicing and MPS pools beside a whole-GPU pool: nvidia.com/gpu gets no class (KEP-5004
    would hand a whole GPU, or find none on a GPU in MIG mode), so every pinned workload gets a claim."""
    whole = api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"})
    pinned_whole = deployment("whole", {"pool": "whole"})
    mig = _plan(
        whole, pinned_whole, api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"}), deployment("slice", MIG_LABELS)
    )
    assert _written_names(mig["files"]) == []
    assert _paths(mig["json"]) == {"slice": ("", "claims"), "whole": ("", "claims")}
    for name, sharing in (("ts", TIME_SLICED), ("mps", MPS)):
        labels = {"pool": name, "nvidia.com/device-plugin.config": name}
        got = _plan(
            whole,
            pinned_whole,
            api_node(f"{name}-0", labels, {"nvidia.com/gpu": "32"}),
            helm_plugin(),
            configs(**{name: sharing}, default="version: v1\n"),
        )
        assert "nvidia.com/gpu" not in _written_names(got["files"]), name
        assert "clusterDeviceClasses" not in yaml.safe_load(got["files"][WEBHOOK].split("\n", 1)[1]), name


def test_a_class_the_cluster_has_for_nvidia_gpu_never_serves_a_mig_single_pod(tmp_path: Path) -> None:
    """A DeviceClass that maps nvidia.com/gpu selects whole GPUs; on a MIG-single node nvidia.com/gpu is a MIG
    slice, so a pod that lands only there gets a claim of the profile's class, even where that mapping has no
    selector the serving class would lack."""
    served = GPU_EXTENDED
    config = tmp_path / "config.yaml"
    config.write_text("mappings:\n- resource: nvidia.com/mig-1g.10gb\n  deviceClassName: mig-1g-10gb.nvidia.com\n")
    got = _plan(
        api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"}),
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        served,
        deployment("slice", MIG_LABELS),
        deployment("whole", {"pool": "whole"}),
        config_file=str(config),
    )
    workloads = {w["name"]: w for w in got["json"]["workloads"]}
    assert workloads["whole"]["path"] == "kep-5004"  # the class serves whole GPUs where they are whole
    assert workloads["slice"]["path"] == "claims"
    assert any("KEP-5004 cannot serve it there" in r for r in workloads["slice"]["reasons"])


def _bound_pod(written_node_name: bool) -> dict[str, Any]:
    """A pod the scheduler bound to whole-0 (managedFields show no nodeName its creator wrote), or one its
    creator pinned there with spec.nodeName."""
    fields: dict[str, Any] = {"f:spec": {"f:containers": {}}}
    if written_node_name:
        fields["f:spec"]["f:nodeName"] = {}
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pinned" if written_node_name else "bound",
            "namespace": "ml",
            "managedFields": [{"manager": "kubectl-create", "operation": "Update", "fieldsV1": fields}],
        },
        "spec": {"nodeSelector": {"pool": "whole"}, "nodeName": "whole-0", "containers": [container]},
    }


def test_a_pod_the_scheduler_bound_is_planned_as_created_again_and_a_pinned_one_as_pinned() -> None:
    """The cutover evicts pods; a bare pod comes back as its creator wrote it: without the nodeName the
    scheduler's binding set (left to KEP-5004), with the one its creator wrote (a claim: KEP-5004 needs the
    scheduler)."""
    got = _plan(api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}), _bound_pod(False), _bound_pod(True))
    assert {w["name"]: w["path"] for w in got["json"]["workloads"]} == {"bound": "kep-5004", "pinned": "claims"}


def test_the_stage_configurations_list_the_clusters_classes_so_convert_decides_as_the_plan(tmp_path: Path) -> None:
    """The webhook reads every class in the cluster; `convert --config` reads only the configuration, so the
    stage configurations list the classes the cluster has besides the plan's own."""
    config = tmp_path / "config.yaml"
    config.write_text("mappings:\n- resource: nvidia.com/mig-1g.10gb\n  deviceClassName: mig-1g-10gb.nvidia.com\n")
    whole = deployment("whole", {"pool": "whole"})
    got = _plan(
        api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"}),
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        GPU_EXTENDED,
        deployment("slice", MIG_LABELS),
        whole,
        config_file=str(config),
    )
    assert _paths(got["json"])["whole"] == ("", "kep-5004")
    webhook = tmp_path / WEBHOOK
    webhook.write_text(got["files"][WEBHOOK])
    listed = yaml.safe_load(got["files"][WEBHOOK].split("\n", 1)[1])["clusterDeviceClasses"]
    assert [(c["name"], c["extendedResourceName"]) for c in listed] == [("gpu-extended", "nvidia.com/gpu")]
    result = convert(whole, load_config(str(webhook), "1.37"))
    assert not result.conversions and [s.resource for s in result.extended] == ["nvidia.com/gpu"]


def test_a_class_the_plan_writes_is_listed_and_its_name_is_not_unmapped() -> None:
    """A workload whose pods can land on a MIG-single node keeps a claim, but nvidia.com/gpu is then mapped by
    the class the plan writes for the whole-GPU pool: the report lists that class and does not call the name
    unmapped."""
    got = _plan(
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        deployment("train", {"pool": "whole"}),
        _bound_pod(True),
    )
    assert _written_names(got["files"]) == ["nvidia.com/gpu"]
    assert {w["name"]: w["path"] for w in got["json"]["workloads"]} == {"train": "kep-5004", "pinned": "claims"}
    assert got["json"]["unmapped"] == []
    text = render_text(got["plan"])
    assert "nvidia.com-gpu -> nvidia.com/gpu (written by the plan: deviceclasses.yaml)" in text
    assert "no class maps" not in text


def test_a_bound_pod_can_land_where_its_selector_lets_it_and_status_entries_keep_a_written_node_name() -> None:
    """Where a pod bound by the scheduler can land is decided without that nodeName too; managedFields that hold
    only status entries (after a reset) say nothing of who wrote the nodeName, so it is kept."""
    bound = _bound_pod(False)
    bound["spec"]["nodeSelector"] = {}
    got = _plan(
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        api_node("whole-1", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        bound,
    )
    (workload,) = got["json"]["workloads"]
    assert workload["can_land"] == {"whole": 2}
    status_only = _bound_pod(False)
    status_only["metadata"]["managedFields"] = [
        {"manager": "kubelet", "operation": "Update", "subresource": "status", "fieldsV1": {"f:status": {}}}
    ]
    got = _plan(
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        api_node("whole-1", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        status_only,
    )
    (workload,) = got["json"]["workloads"]
    assert workload["path"] == "claims" and workload["can_land"] == {"whole": 1}


def test_a_mirror_pod_is_kept_as_the_webhook_keeps_it() -> None:
    """The kubelet creates a static pod's mirror with its nodeName; the webhook leaves mirror pods unconverted,
    so the plan does not promise them a claim."""
    mirror = _bound_pod(True)
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "5f1c0e"}
    got = _plan(api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}), mirror)
    (workload,) = got["json"]["workloads"]
    assert workload["path"] == "kept" and "mirror pod" in workload["reasons"][0]


def test_no_class_is_written_while_the_cluster_runs_a_release_that_drops_extended_resource_name() -> None:
    """Planning for 1.36 on a 1.35 cluster: its apiserver would store the classes without
    extendedResourceName, so none is written yet and the paths stay claims, with the reason."""
    objects = (api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}), deployment("train", {"pool": "whole"}))
    config = load_config(None, "1.36")
    plan, stages = build_plan(cluster_state(*objects, server_version="v1.35.3"), config, "pool")
    assert DEVICE_CLASSES not in manifests(plan, config, stages)
    assert [w.path for w in plan.workloads] == ["claims"]
    assert any("the cluster runs 1.35" in w and "plan again once it runs 1.36" in w for w in plan.warnings)


def test_with_strategy_extended_resource_a_mig_single_pod_gets_a_claim_while_no_class_maps_the_name(
    tmp_path: Path,
) -> None:
    """strategy extendedResource leaves names to KEP-5004; on a MIG-single node nvidia.com/gpu is a MIG slice,
    which the class a user would write for the name does not select, so that pod still gets a claim."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "strategy: extendedResource\n"
        "mappings:\n- resource: nvidia.com/mig-1g.10gb\n  deviceClassName: mig-1g-10gb.nvidia.com\n"
    )
    got = _plan(
        api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"}),
        deployment("slice", MIG_LABELS),
        config_file=str(config),
    )
    (workload,) = got["json"]["workloads"]
    assert workload["path"] == "claims"
    assert any("KEP-5004 cannot serve it there" in r for r in workload["reasons"])
