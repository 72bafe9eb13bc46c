"""Render verification over a repository of many kustomization roots, as a ratio against the same
conversion without it (`--no-verify-render`), run in the same command.

The repository: N applications, each a base (a GPU Deployment) and a production overlay patching its
count, so 2N roots, every one rendering from a changed file; `convert --in-place` of the whole tree
builds each root twice (before and after) with kustomize, on --jobs processes (default: every CPU).

    python bench/verify_roots.py [--applications 500] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{n}
spec:
  selector: {{matchLabels: {{app: app-{n}}}}}
  template:
    metadata: {{labels: {{app: app-{n}}}}}
    spec:
      containers:
      - name: main
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 1
"""
PATCH = DEPLOYMENT.replace("gpu: 1", "gpu: 2").split("  selector:")[0] + (
    "  template:\n    spec:\n      containers:\n      - name: main\n        resources:\n"
    "          limits:\n            nvidia.com/gpu: 2\n"
)


def lay_out(top: Path, applications: int) -> None:
    for n in range(applications):
        app = top / f"app-{n:04}"
        (app / "base").mkdir(parents=True)
        (app / "prod").mkdir()
        (app / "base" / "kustomization.yaml").write_text("resources:\n- deploy.yaml\n")
        (app / "base" / "deploy.yaml").write_text(DEPLOYMENT.format(n=n))
        (app / "prod" / "kustomization.yaml").write_text("resources:\n- ../base\npatches:\n- path: gpus.yaml\n")
        (app / "prod" / "gpus.yaml").write_text(PATCH.format(n=n))


def timed_convert(source: Path, scratch: Path, flags: list[str]) -> tuple[float, int]:
    tree = scratch / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(source, tree)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dra_migrate", "convert", "--in-place", "--report", "none", *flags, str(tree)],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.monotonic() - started, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--applications", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dra-migrate-roots-") as scratch:
        source = Path(scratch) / "source"
        lay_out(source, args.applications)
        subprocess.run(["git", "init", "-q", str(source)], check=True)
        plain, plain_code = timed_convert(source, Path(scratch), ["--no-verify-render", "--jobs", str(args.jobs)])
        verified, code = timed_convert(source, Path(scratch), ["--jobs", str(args.jobs)])
    roots = 2 * args.applications
    print(f"{roots} kustomization roots, {args.jobs} jobs")
    print(f"  convert --no-verify-render: {plain:.1f} s (exit {plain_code})")
    print(f"  convert (every root built before and after): {verified:.1f} s (exit {code})")
    per_root = 1000 * (verified - plain) / roots
    print(f"  verification: {verified / plain:.1f}x the conversion alone, {per_root:.0f} ms a root")
    return 0 if code == 0 and plain_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
