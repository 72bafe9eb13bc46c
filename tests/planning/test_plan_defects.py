"""What the node models fix in the plan: MIG single, MPS, the consumable-shares driver's nodes, malformed
operator objects, 1.34's DeviceClasses and convert --cluster without Nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from planning_support import api_node, cluster_state
from test_node_model import configs, helm_plugin, plan_of

from dra_migrate.cli import main
from dra_migrate.cluster.knowledge import cluster_config
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.configfile import load_config
from dra_migrate.engine import convert
from dra_migrate.planning.build import build_plan
from dra_migrate.planning.write import manifests

MPS = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
TIME_SLICED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"


def deployment(name: str, selector: dict[str, str] | None, gpus: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    if selector:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"selector": {}, "template": {"spec": spec}},
    }


def _workloads(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in plan["workloads"]}


MIG_LABELS = {"pool": "mig", "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "A100-MIG-1g.10gb"}


def test_mig_single_maps_to_the_mig_profile_class_or_is_refused() -> None:
    """`nvidia.com/gpu` on a MIG-single node is a 1g.10gb MIG device: a pod that lands only there gets a
    claim for mig.nvidia.com with that profile, never a whole GPU; one that can also land on whole GPUs is
    kept with the reason."""
    objects = (
        api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"}),
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
        deployment("slice", {"pool": "mig"}),
        deployment("anywhere", None),
        deployment("whole", {"pool": "whole"}),
    )
    plan = plan_of(*objects)
    workloads = _workloads(plan)
    assert workloads["slice"]["path"] == "claims" and workloads["whole"]["path"] == "claims"
    assert workloads["anywhere"]["path"] == "blocked" and "MIG device of profile 1g.10gb" in " ".join(
        workloads["anywhere"]["reasons"]
    )
    assert next(p for p in plan["pools"] if p["name"] == "mig")["mig_single"] == {"mig-0": "1g.10gb"}

    state = cluster_state(*objects, server_version="v1.37.2")
    config = load_config(None, "1.37")
    built, stages = build_plan(state, config, "pool")
    webhook = yaml.safe_load(manifests(built, config, stages)["webhook-config.yaml"].split("\n", 1)[1])
    (entry,) = webhook["sharedDevices"]
    assert entry["convertsAs"] == "nvidia.com/mig-1g.10gb" and entry["sharingNodes"] == [MIG_LABELS]


def test_the_webhook_config_converts_a_mig_single_pod_to_its_profile(tmp_path: Path) -> None:
    """The written sharedDevices entry is what convert --config reads: the claim asks for the profile."""
    objects = (
        api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"}),
        api_node("whole-0", {"pool": "whole"}, {"nvidia.com/gpu": "8"}),
    )
    state = cluster_state(*objects, server_version="v1.37.2")
    config = load_config(None, "1.37")
    built, stages = build_plan(state, config, "pool")
    (tmp_path / "webhook.yaml").write_text(manifests(built, config, stages)["webhook-config.yaml"])
    converted = convert(deployment("slice", {"pool": "mig"}), load_config(str(tmp_path / "webhook.yaml"), "1.37"))
    (template,) = converted.templates
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com"
    assert request["exactly"]["selectors"] == [
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"'}}
    ]


def test_mps_is_never_a_share_claim_and_its_reasons_say_mps() -> None:
    """With --consumable-shares a time-sliced pool's pods get share claims; an MPS pool's never (the
    driver refuses MPS with consumable shares), whichever node the plugin's config is read from first."""
    mps_node = api_node("mps-0", {"pool": "mps", "nvidia.com/device-plugin.config": "mps"}, {"nvidia.com/gpu": "8"})
    objects = (
        mps_node,
        helm_plugin(),
        configs(mps=MPS, default="version: v1\n"),
        deployment("mps-pod", {"pool": "mps"}),
    )
    plan = plan_of(*objects, consumable_shares=True)
    pod = _workloads(plan)["mps-pod"]
    assert pod["path"] == "blocked" and "mps" in pod["reasons"][0] and "time-slicing" not in pod["reasons"][0]
    (sharing,) = plan["pools"][0]["sharing"]
    assert sharing["strategy"] == "mps" and sharing["dra_capacity"] is None and "MPS" in sharing["dra"]

    ts_node = api_node("ts-0", {"pool": "ts", "nvidia.com/device-plugin.config": "ts"}, {"nvidia.com/gpu": "8"})
    mig_node = api_node("mig-0", MIG_LABELS, {"nvidia.com/gpu": "7"})
    both = (
        mps_node,
        ts_node,
        mig_node,
        helm_plugin(),
        configs(mps=MPS, ts=TIME_SLICED),
        deployment("ts-pod", {"pool": "ts"}),
        deployment("mps-pod", {"pool": "mps"}),
        deployment("slice", {"pool": "mig"}),
        deployment("anywhere", None),
    )
    workloads = _workloads(plan_of(*both, consumable_shares=True))
    # one name, three meanings: each pod that can land on one kind only gets what it means there
    assert workloads["ts-pod"]["path"] == "claims" and workloads["slice"]["path"] == "claims"
    assert workloads["mps-pod"]["path"] == "blocked" and workloads["anywhere"]["path"] == "blocked"
    reason = workloads["anywhere"]["reasons"][0]
    assert "mps, 4 per device" in reason and "time-slicing, 4 per device" in reason and "1g.10gb" in reason
    converted = convert(
        deployment("ts-pod", {"pool": "ts"}),
        cluster_config(
            cluster_state(*both, server_version="v1.37.2"), load_config(None, "1.37"), consumable_shares=True
        ),
    )
    (template,) = converted.templates
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["capacity"] == {"requests": {"shares": "1"}}


def test_consumable_shares_driver_values_select_only_the_nodes_that_share() -> None:
    """A pool of which one node's per-node config shares: the driver's values select that node only."""
    shared = api_node("p-0", {"pool": "p", "nvidia.com/device-plugin.config": "ts"}, {"nvidia.com/gpu": "8"})
    whole = api_node("p-1", {"pool": "p"}, {"nvidia.com/gpu": "2"})
    objects = (shared, whole, helm_plugin(), configs(ts=TIME_SLICED, default="version: v1\n"))
    state = cluster_state(*objects, server_version="v1.37.2")
    config = load_config(None, "1.37")
    built, stages = build_plan(state, config, "pool", consumable_shares=True)
    values = yaml.safe_load(manifests(built, config, stages)["dra-driver-values-p.yaml"].split("\n", 1)[1])
    assert values["kubeletPlugin"]["nodeSelector"] == {"pool": "p", "nvidia.com/device-plugin.config": "ts"}


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (
            {
                "kind": "ClusterPolicy",
                "apiVersion": "nvidia.com/v1",
                "metadata": {"name": "cp"},
                "spec": {"devicePlugin": {"enabled": "no"}},
            },
            "spec.devicePlugin.enabled: a string, not true or false",
        ),
        (
            {
                "kind": "ClusterPolicy",
                "apiVersion": "nvidia.com/v1",
                "metadata": {"name": "cp"},
                "spec": {"devicePlugin": {"config": ["x"]}},
            },
            "spec.devicePlugin.config: a list, not a mapping",
        ),
        (
            {
                "kind": "DeviceConfig",
                "apiVersion": "amd.com/v1alpha1",
                "metadata": {"name": "dc", "namespace": "amd"},
                "spec": {"devicePlugin": {"devicePluginArguments": "mixed"}},
            },
            "spec.devicePlugin.devicePluginArguments: a string, not a mapping",
        ),
        (
            {
                "kind": "DeviceConfig",
                "apiVersion": "amd.com/v1alpha1",
                "metadata": {"name": "dc", "namespace": "amd"},
                "spec": {"selector": ["gpu"]},
            },
            "spec.selector: a list, not a mapping",
        ),
    ],
    ids=["policy-enabled", "policy-config", "amd-arguments", "amd-selector"],
)
def test_a_wrong_typed_operator_field_is_an_error_naming_file_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], obj: dict[str, Any], field: str
) -> None:
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump(obj))
    assert main(["plan", "--cluster", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    name = obj["metadata"].get("namespace", "") + ("/" if "namespace" in obj["metadata"] else "")
    assert f"objects.yaml: document 1: {obj['kind']} {name}{obj['metadata']['name']}: {field}" in err
    assert "Traceback" not in err


def test_no_device_class_with_only_extended_resource_name_is_written_for_1_34(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = cluster_state(api_node("gpu-0", {"pool": "a"}, {"nvidia.com/gpu": "8"}), server_version="v1.34.3")
    write_snapshot(state, tmp_path / "cluster")
    assert (
        main(["plan", "--cluster", str(tmp_path / "cluster"), "--write", str(tmp_path / "out"), "--report", "json"])
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    assert not (tmp_path / "out" / "deviceclasses.yaml").exists()
    assert any("DRAExtendedResource" in w and "1.34" in w for w in plan["warnings"])
    assert not any("deviceclasses.yaml" in s["action"] for s in plan["steps"])
    state = cluster_state(api_node("gpu-0", {"pool": "a"}, {"nvidia.com/gpu": "8"}), server_version="v1.36.1")
    write_snapshot(state, tmp_path / "c36")
    assert main(["plan", "--cluster", str(tmp_path / "c36"), "--write", str(tmp_path / "o36")]) == 0
    assert "extendedResourceName: nvidia.com/gpu" in (tmp_path / "o36" / "deviceclasses.yaml").read_text()


def test_convert_with_a_time_slicing_config_and_no_nodes_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = cluster_state(helm_plugin(), configs(default=TIME_SLICED), server_version="v1.36.1")
    write_snapshot(state, tmp_path / "cluster")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(deployment("p", None)))
    assert main(["convert", "--cluster", str(tmp_path / "cluster"), str(manifest)]) == 0
    err = capsys.readouterr().err
    assert "shares nvidia.com/gpu (time-slicing, 4 per device" in err and "no Node" in err
