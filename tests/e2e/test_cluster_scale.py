"""bench/cluster_scale.py at a tiny scale, so the benchmark cannot rot: 5 nodes, 50 pods from a
Deployment and a Job, 3 webhook replicas behind its relay, each phase on a control plane of its own
(the bench starts them; this test does not use the session `control_plane` fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .binaries import BUILD_SCRIPT, find_binaries, missing_binaries, selected_releases

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cluster_scale.py"
PODS = 50
REPLICAS = 3


def _newest_release_with_binaries() -> str:
    releases = selected_releases()
    for release in reversed(releases):
        if find_binaries(release) is not None:
            return release.minor
    newest = releases[-1]
    message = f"Kubernetes {newest} binaries missing ({', '.join(missing_binaries(newest))}); run {BUILD_SCRIPT}"
    if os.environ.get("CI", "").strip().lower() in ("true", "1"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def test_cluster_scale_bench_accounts_for_every_pod(tmp_path: Path) -> None:
    release = _newest_release_with_binaries()
    report_path = tmp_path / "scale.json"
    argv = [sys.executable, str(BENCH), "--nodes", "5", "--pods", str(PODS), "--per-workload", "25"]
    argv += ["--replicas", str(REPLICAS), "--release", release, "--stall", "30", "--json", str(report_path)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"
    report: dict[str, Any] = json.loads(report_path.read_text())
    baseline, webhook = report["phases"]["baseline"], report["phases"]["webhook"]

    for phase in (baseline, webhook):
        assert phase["workloads"] == {"Deployment": 1, "Job": 1}, phase["workloads"]
        assert phase["pods_existing"] == PODS, phase
        assert phase["accounting"]["existing"] == PODS and phase["accounting"]["lost"] == 0, phase["accounting"]
        assert phase["pods_per_second"] > 0
        assert phase["pod_create"]["count"] >= PODS, phase["pod_create"]
        assert phase["cpu"]["kube-apiserver"]["cpu_s"] > 0, phase["cpu"]

    # Without the webhook nothing calls it and every pod keeps nvidia.com/gpu.
    assert baseline["admission_webhook"]["count"] == 0, baseline["admission_webhook"]
    assert baseline["accounting"]["converted"] == 0, baseline["accounting"]
    # With it, the apiserver timed one call per pod and every pod came out converted.
    assert webhook["admission_webhook"]["count"] == PODS, webhook["admission_webhook"]
    assert webhook["accounting"]["converted"] == PODS, webhook["accounting"]
    # The relay spread the calls: each replica answered some, together one per pod.
    per_replica = webhook["reviews_per_replica"]
    assert len(per_replica) == REPLICAS and sum(per_replica) == PODS, per_replica
    assert all(count > 0 for count in per_replica), per_replica
