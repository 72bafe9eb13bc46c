"""Translator speed and memory, as ratios against baselines measured in the same run.

Tree (bench/manifest_tree.py: ~2,000 files, 20,000 documents, 10% GPU workloads, Helm-rendered
manifests, CRDs, v1beta1 DRA objects), each timed as a real `dra-migrate` process, best of
--repeat runs:

* `cat` of every file (I/O floor) and a PyYAML-C load + dump of every file (the YAML floor, one
  process, in this process);
* `convert --output-dir` and `diff` on every core (target <= 0.5x the YAML floor), `convert --jobs 1`;
* `convert --validate` (target <= 2x convert);
* kubeconform on the same tree with the same strict 1.34 schemas, and pluto `detect-files`, built
  from the Go module proxy into ~/.cache/dra-migrate/bench-tools (skipped, with the reason, when
  they cannot be built);
* start-up: `dra-migrate --version` and a one-file convert over a bare `python -c pass`
  (median of --starts runs; target <= 0.1 s);
* the editing path: one file of GPU Deployments (every document edited) against its YAML floor
  (target <= 2x), and memory at a quarter and all of its documents (peak traced bytes per input
  byte; target: flat).

    python bench/translate.py [--documents 20000] [--gpu-documents 25429] [--repeat 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest_tree import build_tree, gpu_file

from dra_migrate.cli import main as dra_migrate

TOOLS = Path.home() / ".cache" / "dra-migrate" / "bench-tools"
GO_TOOLS = {
    "kubeconform": "github.com/yannh/kubeconform/cmd/kubeconform@v0.7.0",
    "pluto": "github.com/FairwindsOps/pluto/v5@v5.21.3",
}
CLI = [sys.executable, "-m", "dra_migrate"]
REPO = Path(__file__).resolve().parents[1]


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def yaml_floor(src: Path, out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    for path in sorted(src.rglob("*.yaml")):
        documents = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))
        target = out / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.dump_all(documents, Dumper=yaml.CSafeDumper, sort_keys=False), encoding="utf-8")


def cli(*args: str, ok: tuple[int, ...] = (0, 1, 2)) -> None:
    done = subprocess.run([*CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode not in ok:
        sys.exit(f"dra-migrate {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")


def go_tool(name: str) -> tuple[Path | None, str]:
    """The tool's binary, built once with `go install`, or None and why not."""
    binary = TOOLS / name
    if binary.exists():
        return binary, ""
    if shutil.which("go") is None:
        return None, "no Go toolchain"
    env = {**os.environ, "GOBIN": str(TOOLS)}
    done = subprocess.run(["go", "install", GO_TOOLS[name]], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["go install failed"])[-1][:160]
    return binary, ""


def kubeconform_schemas(work: Path) -> str:
    """kubernetes-validate's strict 1.34 schemas, with their references made local files.

    Their `$id`s are kubernetes.io URLs, so kubeconform would fetch `_definitions.json` from there.
    """
    import kubernetes_validate

    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.34.0-local-strict"
    local = work / "kubeconform-schemas"
    local.mkdir()
    for schema in base.glob("*.json"):
        contents = json.loads(schema.read_text(encoding="utf-8"))
        contents.pop("$id", None)
        text = json.dumps(contents).replace('"/api/_definitions.json#', '"_definitions.json#')
        (local / schema.name).write_text(text, encoding="utf-8")
    return str(local) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json"


def startup(starts: int, one_file: Path) -> tuple[float, float, float]:
    """Median CPU time (user + system) of each process: unlike wall time, it barely moves when other
    jobs load the machine, which would otherwise decide a 0.1 s budget."""
    runs: dict[str, list[float]] = {"pass": [], "version": [], "convert": []}
    commands = {
        "pass": [sys.executable, "-c", "pass"],
        "version": [*CLI, "--version"],
        "convert": [*CLI, "convert", str(one_file)],
    }
    for _ in range(starts):  # interleaved, so load on the machine hits all three alike
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            runs[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    median = {name: statistics.median(times) for name, times in runs.items()}
    return median["pass"], median["version"] - median["pass"], median["convert"] - median["pass"]


def peak_per_byte(path: Path, work: Path) -> float:
    """Peak traced memory of an in-process one-core convert, per byte of input."""
    out = work / "out-mem"
    tracemalloc.start()
    with contextlib.redirect_stderr(io.StringIO()):
        dra_migrate(["convert", "--jobs", "1", "--report", "none", "--output-dir", str(out), str(path)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    shutil.rmtree(out, ignore_errors=True)
    return peak / path.stat().st_size


def verdict(value: float, limit: float) -> str:
    return "ok" if value <= limit else "OVER TARGET"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--gpu-documents", type=int, default=25_429)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--starts", type=int, default=15)
    args = parser.parse_args()
    # Byte-compile the package as an install does: PYTHONDONTWRITEBYTECODE would otherwise make every
    # process compile it from source, which is not what users run.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "dra_migrate")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = work / "tree"
        files = build_tree(src, args.documents)
        size = sum(p.stat().st_size for p in src.rglob("*.yaml"))
        print(f"tree: {args.documents} documents in {files} files, {size / 1e6:.1f} MB; {os.cpu_count()} CPUs")
        out = str(work / "out")
        floor = best(lambda: yaml_floor(src, work / "floor"), args.repeat)
        io_floor = best(lambda: subprocess.run(f"find {src} -type f -exec cat {{}} + > /dev/null", shell=True), 3)
        convert = best(lambda: cli("convert", "--report", "none", "--output-dir", out, str(src)), args.repeat)
        one_core = best(
            lambda: cli("convert", "--jobs", "1", "--report", "none", "--output-dir", out, str(src)), args.repeat
        )
        diff = best(lambda: cli("diff", "--report", "none", str(src)), args.repeat)
        validate = best(
            lambda: cli("convert", "--validate", "--report", "none", "--output-dir", out, str(src)), args.repeat
        )
        print(f"YAML floor (PyYAML-C load + dump, one core): {floor:7.2f} s")
        print(f"I/O floor (cat of every file):             {io_floor:7.2f} s  {io_floor / floor:.3f}x the YAML floor")
        print(
            f"convert -o (all cores):                    {convert:7.2f} s  {convert / floor:.2f}x  (target <= 0.50x: "
            f"{verdict(convert / floor, 0.5)})"
        )
        print(f"convert -o --jobs 1:                       {one_core:7.2f} s  {one_core / floor:.2f}x")
        print(
            f"diff (all cores):                          {diff:7.2f} s  {diff / floor:.2f}x  (target <= 0.50x: "
            f"{verdict(diff / floor, 0.5)})"
        )
        print(
            f"convert --validate:                        {validate:7.2f} s  {validate / convert:.2f}x convert  "
            f"(target <= 2x: {verdict(validate / convert, 2.0)})"
        )
        for name in GO_TOOLS:
            binary, why = go_tool(name)
            if binary is None:
                print(f"{name}: skipped ({why})")
                continue
            if name == "kubeconform":
                command = [
                    str(binary),
                    "-strict",
                    "-ignore-missing-schemas",
                    "-summary",
                    "-n",
                    str(os.cpu_count()),
                    "-schema-location",
                    kubeconform_schemas(work),
                    str(src),
                ]
            else:
                command = [str(binary), "detect-files", "-d", str(src)]
            took = best(lambda c=command: subprocess.run(c, capture_output=True, check=False), args.repeat)  # type: ignore[misc]
            print(
                f"{name} on the same tree:{'':<{24 - len(name)}}{took:7.2f} s  "
                f"(convert {convert / took:.2f}x, convert --validate {validate / took:.2f}x its time)"
            )

        one_file = work / "one.yaml"
        gpu_file(one_file, 1)
        bare, version, single = startup(args.starts, one_file)
        print(
            f"start-up over `python -c pass` ({bare * 1000:.0f} ms): --version +{version * 1000:.0f} ms, "
            f"one-file convert +{single * 1000:.0f} ms  (target <= 100 ms: {verdict(max(version, single), 0.1)})"
        )

        big = work / "gpu.yaml"
        gpu_file(big, args.gpu_documents)
        big_floor = best(lambda: yaml_floor_file(big, work / "big-floor.yaml"), args.repeat)
        edit = best(
            lambda: cli("convert", "--report", "none", "--output-dir", str(work / "big-out"), str(big)), args.repeat
        )
        print(
            f"editing path: {args.gpu_documents} GPU Deployments in one file ({big.stat().st_size / 1e6:.0f} MB): "
            f"floor {big_floor:.2f} s, convert {edit:.2f} s = {edit / big_floor:.2f}x  "
            f"(target <= 2x: {verdict(edit / big_floor, 2.0)})"
        )
        quarter = work / "gpu-quarter.yaml"
        gpu_file(quarter, max(args.gpu_documents // 4, 100))
        small_peak, large_peak = peak_per_byte(quarter, work), peak_per_byte(big, work)
        print(
            f"editing path memory: peak {small_peak:.1f} bytes per input byte at {args.gpu_documents // 4} "
            f"documents, {large_peak:.1f} at {args.gpu_documents} (ratio {large_peak / small_peak:.2f}; "
            f"target: flat)"
        )
    return 0


def yaml_floor_file(path: Path, out: Path) -> None:
    documents = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))
    out.write_text(yaml.dump_all(documents, Dumper=yaml.CSafeDumper, sort_keys=False), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
