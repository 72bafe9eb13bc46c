"""The Intel GPU device plugin's `-shared-dev-num`: each GPU advertised N times under its own name, so a
request for one is a share; the plan and `convert --cluster` never turn it into an exclusive claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from planning_support import api_node, cluster_state

from dra_migrate.cli import main
from dra_migrate.cluster.intelplugin import intel_node_sharing, intel_shares
from dra_migrate.cluster.nvidiaplugin import Sharing
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.cluster.state import ClusterState

NODE_LABEL = {"intel.feature.node.kubernetes.io/gpu": "true"}


def _plugin(args: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "intel-gpu-plugin", "namespace": "inteldeviceplugins-system"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": NODE_LABEL,
                    "containers": [{"name": "p", "image": "intel/intel-gpu-plugin:0.32.0", "args": args}],
                }
            }
        },
    }


def _state(*objects: dict[str, Any]) -> ClusterState:
    return cluster_state(*objects, server_version="v1.35.4")


@pytest.mark.parametrize(
    ("args", "replicas"),
    [(["-shared-dev-num=4"], 4), (["--shared-dev-num", "3"], 3), (["-shared-dev-num", "1"], None), ([], None)],
)
def test_the_flag_in_its_forms(args: list[str], replicas: int | None) -> None:
    node = api_node("gpu-0", NODE_LABEL, {"gpu.intel.com/i915": "8"})
    shares = intel_shares(_state(_plugin(args)))
    expected = (
        (Sharing("shared-dev-num", replicas, "gpu.intel.com/i915", False, "gpu.intel.com/i915"),) if replicas else ()
    )
    assert intel_node_sharing(shares, node) == expected
    assert intel_node_sharing(shares, api_node("cpu-0", {}, {"gpu.intel.com/i915": "8"})) == ()  # not its node


def test_the_operators_custom_resource() -> None:
    operator = {
        "apiVersion": "deviceplugin.intel.com/v1",
        "kind": "GpuDevicePlugin",
        "metadata": {"name": "gpu"},
        "spec": {"sharedDevNum": 2, "nodeSelector": NODE_LABEL},
    }
    node = api_node("gpu-0", NODE_LABEL, {"gpu.intel.com/xe": "2"})
    assert intel_node_sharing(intel_shares(_state(operator)), node) == (
        Sharing("shared-dev-num", 2, "gpu.intel.com/xe", False, "gpu.intel.com/xe"),
    )


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: transcode}
spec:
  containers:
  - name: main
    image: ffmpeg
    resources:
      limits: {gpu.intel.com/i915: 1}
"""


def test_a_shared_intel_gpu_is_never_an_exclusive_claim(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = _state(_plugin(["-shared-dev-num=4"]), api_node("gpu-0", NODE_LABEL, {"gpu.intel.com/i915": "4"}))
    write_snapshot(state, tmp_path / "cluster")
    assert main(["plan", "--cluster", str(tmp_path / "cluster"), "--report", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (pool,) = plan["pools"]
    assert pool["sharing"] == [
        {
            "advertised": "gpu.intel.com/i915",
            "strategy": "shared-dev-num",
            "replicas": 4,
            "nodes": ["gpu-0"],
            "dra_capacity": None,
            "dra": "no DRA driver setting known to dra-migrate hands out shares of these devices",
        }
    ]
    assert pool["gpus"] == {"device-plugin": 1}
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    assert main(["convert", "--in-place", "--cluster", str(tmp_path / "cluster"), str(manifest)]) == 2
    assert manifest.read_text() == POD
    assert "shared-device" in capsys.readouterr().err
