"""The checked-in release table is exactly what tools/releasegen reads from the pinned Kubernetes sources.

Runs the generator (Go) against k8s.io/kubernetes and k8s.io/api at the versions in
tools/releasegen/releases.txt, fetched with `go mod download` into the module cache, and the
generator's own unit tests on a small synthetic source tree. Without `go` these tests skip, except
under CI=true, where they must run.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "releasegen"
TABLE = ROOT / "dra_migrate" / "engine" / "releases" / "table.py"
GO = shutil.which("go")

if GO is None and os.environ.get("CI") != "true":
    pytest.skip("`go` is not installed: the release table cannot be regenerated here", allow_module_level=True)


def go(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    assert GO is not None, "CI=true: `go` is required to check the release table against its sources"
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    env.setdefault("GOTOOLCHAIN", "local")
    return subprocess.run(
        [GO, *args], cwd=GENERATOR, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_generator_unit_tests() -> None:
    result = go("test", "./...")
    assert result.returncode == 0, result.stdout + result.stderr


def test_checked_in_table_is_the_generated_one(tmp_path: Path) -> None:
    out = tmp_path / "table.py"
    result = go("run", ".", "-out", str(out))
    assert result.returncode == 0, result.stderr
    generated, checked_in = out.read_text(encoding="utf-8"), TABLE.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            checked_in.splitlines(keepends=True), generated.splitlines(keepends=True), "checked in", "generated", n=1
        )
    )
    assert not diff, f"the release table is stale; run `make releases`:\n{diff[:4000]}"
