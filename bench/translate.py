"""Translator throughput and memory, as ratios against a bare PyYAML load + dump of the same corpus.

Builds N documents (about 10% GPU workloads taken from the shared corpus, the rest ordinary
manifests: ConfigMaps, Services, Deployments without devices), spread over files of 10 documents,
then times in this one process:

* baseline: for every file, read it, `yaml.load_all(CSafeLoader)`, `yaml.dump_all(CSafeDumper)`,
  write the result;
* `dra-migrate convert -o OUT DIR` (in-process, the real command path).

It prints documents/s for both and the ratio (target: convert <= 1.5x the baseline). Memory: peak
traced allocations of the convert run at N and 4N documents (target: the peak does not grow with
the number of files).

    python bench/translate.py [--documents 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import yaml

from dra_migrate.cli import main as dra_migrate

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "legacy"
DOCS_PER_FILE = 10

ORDINARY = [
    """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-{i}
  namespace: team-{ns}
  labels: {{app: web-{i}, tier: backend}}
data:
  LOG_LEVEL: info  # verbose in staging
  FEATURE_FLAGS: "a,b,c"
""",
    """\
apiVersion: v1
kind: Service
metadata:
  name: web-{i}
  namespace: team-{ns}
spec:
  selector:
    app: web-{i}
  ports:
  - name: http
    port: 80
    targetPort: 8080
""",
    """\
# web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: team-{ns}
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web-{i}
  template:
    metadata:
      labels:
        app: web-{i}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 8080
        resources:
          requests:
            cpu: 100m
            memory: 128Mi
          limits:
            memory: 256Mi
""",
]


def gpu_documents() -> list[str]:
    """Single GPU workload documents from the corpus, kept as their exact text."""
    found: list[str] = []
    for path in sorted(CORPUS.glob("*.y*ml")):
        for chunk in path.read_text().split("\n---"):
            chunk = chunk.strip("-\n") + "\n"
            try:
                doc = yaml.load(chunk, Loader=yaml.CSafeLoader)
            except yaml.YAMLError:
                continue
            if isinstance(doc, dict) and "nvidia.com/gpu" in chunk and doc.get("kind") in ("Pod", "Deployment", "Job"):
                found.append(chunk)
    if not found:
        sys.exit(f"no GPU workloads found under {CORPUS}")
    return found


def build_tree(root: Path, documents: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    gpu = gpu_documents()
    root.mkdir(parents=True)
    batch: list[str] = []
    for i in range(documents):
        if i % 10 == 0:
            batch.append(rng.choice(gpu))
        else:
            batch.append(rng.choice(ORDINARY).format(i=i, ns=i % 17))
        if len(batch) == DOCS_PER_FILE:
            (root / f"m{i // DOCS_PER_FILE:05d}.yaml").write_text("---\n".join(batch))
            batch = []
    if batch:
        (root / "last.yaml").write_text("---\n".join(batch))


def baseline(src: Path, out: Path) -> None:
    for path in sorted(src.glob("*.yaml")):
        docs = list(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
        (out / path.name).write_text(yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False))


def convert(src: Path, out: Path) -> None:
    with contextlib.redirect_stderr(io.StringIO()):
        code = dra_migrate(["convert", "--report", "none", "--output-dir", str(out), str(src)])
    if code not in (0, 2):
        sys.exit(f"convert failed with exit code {code}")


def timed(run: Callable[[Path, Path], None], src: Path, work: Path, repeat: int) -> float:
    best = float("inf")
    for attempt in range(repeat):
        out = work / f"out-{run.__name__}-{attempt}"
        out.mkdir()
        started = time.perf_counter()
        run(src, out)
        best = min(best, time.perf_counter() - started)
        shutil.rmtree(out)
    return best


def peak_memory(src: Path, work: Path) -> int:
    out = work / "out-mem"
    out.mkdir()
    tracemalloc.start()
    convert(src, out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    shutil.rmtree(out)
    return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = work / "src"
        build_tree(src, args.documents)
        convert(src, work)  # warm imports and schema-free code paths once, outside the timing
        shutil.rmtree(work / "out", ignore_errors=True)
        base = timed(baseline, src, work, args.repeat)
        ours = timed(convert, src, work, args.repeat)
        print(f"documents: {args.documents} in {len(list(src.glob('*.yaml')))} files (10% GPU workloads)")
        print(f"baseline CSafeLoader load + CSafeDumper dump: {base:.3f}s  {args.documents / base:,.0f} docs/s")
        print(f"dra-migrate convert -o:                      {ours:.3f}s  {args.documents / ours:,.0f} docs/s")
        print(f"ratio convert / baseline: {ours / base:.2f}x  (target <= 1.50x)")

        small, large = work / "mem-small", work / "mem-large"
        build_tree(small, max(args.documents // 4, 100), seed=1)
        build_tree(large, args.documents, seed=1)
        peak_small, peak_large = peak_memory(small, work), peak_memory(large, work)
        print(
            f"peak traced memory: {peak_small / 1e6:.1f} MB at {args.documents // 4} docs, "
            f"{peak_large / 1e6:.1f} MB at {args.documents} docs (ratio {peak_large / peak_small:.2f}x; "
            "target: flat)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
