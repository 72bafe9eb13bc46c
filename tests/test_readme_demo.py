"""The README's first command, as a new user types it, in a fresh clone of this checkout.

The clone gets the working tree's files (so uncommitted work is what is tested) but none of its
state: no `out/`, no caches. To keep the suite fast it borrows the running virtualenv instead of
installing one (`.ci/run` also runs the demo with a virtualenv of its own), and puts the clone first
on PYTHONPATH so the clone's package, not the checkout's, does the work.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import REPO_ROOT

QUICK_START = re.compile(r"## Quick start.*?```sh\n(.*?)```", re.DOTALL)


def readme_commands() -> list[str]:
    """The commands of the README's quick start block, comments stripped."""
    found = QUICK_START.search((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    assert found, "the README has no quick start block"
    return [line.split("#", 1)[0].strip() for line in found.group(1).splitlines() if line.split("#", 1)[0].strip()]


def fresh_clone(destination: Path) -> Path:
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    clone = destination / "dra-migrate"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True, timeout=120)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source, target = REPO_ROOT / name, clone / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif not source.exists():  # deleted in the working tree
            target.unlink(missing_ok=True)
    return clone


def test_readme_quick_start_demo_runs_in_a_fresh_clone(tmp_path: Path) -> None:
    commands = readme_commands()
    assert commands[0] == "make demo", commands
    if shutil.which("make") is None:
        pytest.skip("needs make")
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix) or not (venv / "bin" / "dra-migrate").exists():
        pytest.skip("needs the suite to run from a virtualenv with dra-migrate installed")
    clone = fresh_clone(tmp_path)
    (clone / ".venv").symlink_to(venv, target_is_directory=True)
    environment = {**os.environ, "PYTHONPATH": str(clone), "NO_COLOR": "1"}
    for attempt in (1, 2):  # twice in a row: the second run finds out/ from the first
        # `-o` takes the borrowed virtualenv as set up: make must not reinstall it from the clone
        done = subprocess.run(
            [*commands[0].split(), "-o", ".venv/.installed"],
            cwd=clone,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"run {attempt}:\n{output}"
        assert "Traceback" not in output, f"run {attempt}:\n{output}"
        assert "converted manifests written to out/" in output
    written = {p.relative_to(clone / "out").as_posix() for p in (clone / "out").rglob("*") if p.is_file()}
    assert "gpu-pod.yaml" in written and "resourceClaims" in (clone / "out" / "gpu-pod.yaml").read_text()
    # examples/krm converts at render time (its exec KRM function): the demo leaves it out of the run, and
    # the output tree still holds it as it was, so `kustomize build out/krm` works
    for name in ("kustomization.yaml", "training.yaml", "dra-migrate.yaml", "dra-migrate-krm"):
        assert (clone / "out" / "krm" / name).read_bytes() == (clone / "examples" / "krm" / name).read_bytes()
    assert (clone / "out" / "krm" / "dra-migrate-krm").stat().st_mode & 0o111, "the function stays executable"
