"""The plan's HTML page in a real headless browser (Debian's Chromium, which CI installs from the
distribution's packages; elsewhere test_plan_snapshot checks the page with an HTML parser): the browser
builds the tables and the chart, and the bars it draws are as long as the devices they stand for."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from gpu_cluster import POOL, snapshot_objects
from png import colour_counts

from dra_migrate.cli import main
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.cluster.state import ClusterState
from dra_migrate.planning.html import STACK_COLOURS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium (apt-get install chromium); the page is checked by an HTML parser only"
)
# a browser that starts without a profile, a sandbox (root in CI) or the network
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--force-device-scale-factor=1",
    "--hide-scrollbars",
)


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _chromium(tmp_path: Path, *args: str) -> str:
    assert CHROMIUM is not None
    result = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_page_in_chromium(tmp_path: Path) -> None:
    objects, version = snapshot_objects()
    state = ClusterState(server_version=version, api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add(objects)
    write_snapshot(state, tmp_path / "cluster")
    page = tmp_path / "plan.html"
    argv = ["plan", "--cluster", str(tmp_path / "cluster"), "--pool-label", POOL, "--report", "html"]
    assert main([*argv, "--report-file", str(page)]) == 2  # the node served both ways

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.count("<table>") == 4 + 3  # a table per pool, workloads, quotas, the DeviceClass the plan writes
    assert dom.count("<rect ") == 2 * 4 + 2  # two bars per pool, two legend keys
    assert "Pool shared: device-plugin" in dom

    shot = tmp_path / "plan.png"
    _chromium(tmp_path, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri())
    counts = colour_counts(shot)
    legend = 10 * 10
    plugin = counts[_rgb(STACK_COLOURS["device-plugin"])] - legend
    dra = counts[_rgb(STACK_COLOURS["dra"])] - legend
    # physical GPUs by stack: device plugin 2 + 4 + 8 (pools mixed, shared, whole: MIG slices are parts of GPUs,
    # and both-0's GPUs count once, as the plugin's), DRA 8
    assert plugin > 0 and dra > 0
    assert plugin / dra == pytest.approx(14 / 8, rel=0.05)
