"""The webhook's memory against what other tenants keep in the cluster: `dra-migrate serve` (real
gunicorn workers over TLS) on the in-memory API holding 0, 10,000 and 100,000 ResourceClaimTemplates
that are not dra-migrate's, each the size of a real one with CEL selectors and an opaque config.

    python bench/webhook_memory.py [--counts 0,10000,100000] [--workers 2] [--reviews 200]

For each count the server starts on a fresh API, its watched copies are listed and watching, it
answers `--reviews` GPU pod reviews (creating its own template), and then the resident memory of the
master and every worker is read from /proc. The figures are printed as they are and as ratios to the
0 case: the webhook watches only its own templates (by label), so they must stay flat.

    python bench/webhook_memory.py --own 0,5000,20000 [--worker-counts 2,4] [--namespaces 2000] [--quotas 500]

measures instead what the webhook's own work costs a pod: for each worker count, a baseline run on
an empty API (no namespaces, quotas or templates), then runs with `--namespaces` namespaces,
`--quotas` ResourceQuotas and that many of dra-migrate's own templates (each a distinct claim spec,
the worst case for the copy). Per run it prints the resident memory (VmRSS) of the master, the
watcher process and the mean worker, the pod's memory (the sum of its processes' proportional set
sizes, so that pages the forked processes share count once, plus the copy's file in the pod's
memory-backed /tmp, which the processes that map it do not count again), the pod's state
(its memory less the baseline run's), and the list and watch requests the pod made per resource once
synced. The watcher keeps the pod's one copy, so neither the state nor the requests grow with the
number of workers.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import shutil
import signal
import ssl
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "common"))
sys.path.insert(0, str(ROOT / "bench"))

from fakekube import TEMPLATES, FakeKube, FakeKubeServer  # noqa: E402
from polling import wait_until  # noqa: E402
from webhook import gpu_pod_review, start_server  # noqa: E402

from dra_migrate.certs.generate import create_bundle, write_bundle  # noqa: E402

FOREIGN_NAMESPACES = 200


def foreign_template(number: int) -> dict[str, Any]:
    """Another tenant's template: no managed-by label of dra-migrate, selectors and a config as real ones have."""
    selectors = [
        {"cel": {"expression": f'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3 {number}"'}},
        {"cel": {"expression": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'}},
    ]
    config = {
        "driver": "gpu.nvidia.com",
        "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "GpuConfig",
            "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}},
        },
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": f"tenant-gpu-{number}",
            "namespace": f"tenant-{number % FOREIGN_NAMESPACES}",
            "uid": f"00000000-0000-4000-8000-{number:012d}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app.kubernetes.io/name": "trainer", "team": f"team-{number % 17}"},
            "annotations": {"example.com/cost-center": f"cc-{number % 97}"},
        },
        "spec": {
            "metadata": {"labels": {"team": f"team-{number % 17}"}},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 1 + number % 8,
                                "selectors": selectors,
                            },
                        }
                    ],
                    "config": [{"requests": ["gpu"], "opaque": config}],
                }
            },
        },
    }


def post_review(port: int, ca_file: Path, body: bytes) -> int:
    """The HTTP status of one review POSTed to the local server."""
    context = ssl.create_default_context(cafile=str(ca_file))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def tree_rss_kib(pid: int, field: str = "VmRSS") -> dict[int, int]:
    """`field` of /proc/<pid>/status (KiB: VmRSS, VmHWM) of `pid` and its child processes."""
    found: dict[int, int] = {}
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            found[current] = int(next(line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:")))
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, ValueError, StopIteration):
            continue
    return found


WATCHER_NAME = "dra-watcher"  # its /proc/<pid>/comm


def watcher_pid(processes: dict[int, int]) -> int | None:
    for pid in processes:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == WATCHER_NAME:
                return pid
        except OSError:
            continue
    return None


def pss_kib(pid: int) -> int:
    """The proportional set size of `pid` (KiB): its share of the pages it has in common with others,
    less the pages of memory-backed files it maps (the copy's file, counted once by its size)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    fields = {line.split(":")[0]: int(line.split()[1]) for line in rollup.splitlines()[1:] if line.strip()}
    return fields.get("Pss", 0) - fields.get("Pss_Shmem", 0)


def copy_file_kib(pid: int) -> int:
    """The size of the copy's file and its write-ahead log (KiB), found among the open files of `pid`."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:
            continue
        if target.name.startswith("cluster-copy.sqlite3") and not target.name.endswith("-shm"):
            total += target.stat().st_size // 1024
    return total


def measure(work: Path, count: int, workers: int, reviews: int) -> tuple[int, int, float]:
    """(total RSS KiB, largest RSS of a process but the master KiB, seconds to start and sync) with
    `count` foreign templates."""
    fake = FakeKube()
    fake.add_namespace("ml")
    fake.fill(TEMPLATES, [foreign_template(number) for number in range(count)])
    with FakeKubeServer(fake) as served:
        started = time.monotonic()
        process, port = start_server(work, served.write_kubeconfig(work / "kubeconfig"), workers)
        try:
            wait_until(
                lambda: fake.calls_to("GET", "resourceclaimtemplates?watch=true") >= 1,
                timeout=600,
                what="the pod's template watch",
            )
            synced = time.monotonic() - started
            body = gpu_pod_review()
            for _ in range(reviews):
                status = post_review(port, work / "ca.crt", body)
                if status != 200:
                    raise SystemExit(f"a review was answered {status}")
            time.sleep(1.0)
            rss = tree_rss_kib(process.pid)
            workers_rss = [kib for pid, kib in rss.items() if pid != process.pid]
            return sum(rss.values()), max(workers_rss, default=0), synced
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def own_template(number: int, namespaces: int) -> dict[str, Any]:
    """One of dra-migrate's templates (its managed-by label), each with a claim spec of its own."""
    template = foreign_template(number)
    metadata = template["metadata"]
    metadata["name"] = f"gpu-nvidia-com-{1 + number % 8}-{number:06d}"
    metadata["namespace"] = f"team-{number % max(namespaces, 1)}"
    metadata["labels"] = {"app.kubernetes.io/managed-by": "dra-migrate"}
    del metadata["annotations"]
    return template


def own_cluster(templates: int, namespaces: int, quotas: int) -> FakeKube:
    """An API holding `namespaces` namespaces, `quotas` ResourceQuotas and `templates` of dra-migrate's."""
    fake = FakeKube()
    fake.add_namespace("ml")
    for number in range(namespaces):
        fake.add_namespace(f"team-{number}", {"team": f"team-{number % 17}", "tier": "batch"})
    for number in range(quotas):
        hard = {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "16", "requests.cpu": "64", "pods": "100"}
        fake.add_quota(f"team-{number % max(namespaces, 1)}", f"quota-{number}", hard, {"pods": "3"})
    fake.fill(TEMPLATES, [own_template(number, namespaces) for number in range(templates)])
    return fake


WATCHED = ("namespaces", "resourcequotas", "resourceclaimtemplates", "deviceclasses")


def cluster_lists(fake: FakeKube, plural: str) -> int:
    """The cluster-wide lists of `plural` begun (a list's further pages and the watches not counted)."""
    with fake.lock:
        paths = [path for method, path in fake.calls if method == "GET" and f"/{plural}?" in path]
    return sum(
        1 for path in paths if "/namespaces/" not in path and "watch=true" not in path and "continue=" not in path
    )


def watched(fake: FakeKube, plural: str) -> bool:
    return fake.calls_to("GET", f"{plural}?watch=true") >= 1


def measure_own(work: Path, fake: FakeKube, workers: int, reviews: int) -> dict[str, float]:
    """Memory (KiB) of the master, the watcher, the mean worker and the pod, and the list and watch
    requests per resource, once the pod's copies are listed and watching and `reviews` reviews are
    answered."""
    with FakeKubeServer(fake) as served:
        process, port = start_server(work, served.write_kubeconfig(work / "kubeconfig"), workers)
        try:
            for plural in WATCHED:
                wait_until(functools.partial(watched, fake, plural), timeout=600, what=f"the pod's {plural} watch")
            body = gpu_pod_review()
            for _ in range(reviews):
                if post_review(port, work / "ca.crt", body) != 200:
                    raise SystemExit("a review was not answered 200")
            time.sleep(1.0)
            rss = tree_rss_kib(process.pid)
            watcher = watcher_pid(rss)
            copy_file = copy_file_kib(watcher) if watcher else 0
            pod = sum(pss_kib(pid) for pid in rss) + copy_file
            figures = {
                "copy file": float(copy_file),
                "master": float(rss.pop(process.pid)),
                "watcher": float(rss.pop(watcher, 0) if watcher else 0),
                "worker": sum(rss.values()) / max(len(rss), 1),
                "pod": float(pod),
            }
            for plural in WATCHED:
                figures[f"lists {plural}"] = float(cluster_lists(fake, plural))
                figures[f"watches {plural}"] = float(fake.calls_to("GET", f"{plural}?watch=true"))
            return figures
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def report_own(work: Path, counts: list[int], worker_counts: list[int], args: argparse.Namespace) -> None:
    print(f"namespaces: {args.namespaces}; quotas: {args.quotas}; reviews per run: {args.reviews}")
    print(
        f"{'workers':>7} {'own templates':>13} {'master MiB':>10} {'watcher MiB':>11} {'worker MiB':>10} "
        f"{'copy file MiB':>13} {'pod MiB':>8} {'state/pod':>9} {'lists/resource':>14} {'watches/resource':>16}"
    )
    for workers in worker_counts:
        base = measure_own(work, FakeKube(), workers, args.reviews)
        runs = [("none", base)] + [
            (f"{count:,}", measure_own(work, own_cluster(count, args.namespaces, args.quotas), workers, args.reviews))
            for count in counts
        ]
        for label, figures in runs:
            state = figures["pod"] - base["pod"]
            lists = max(figures[f"lists {plural}"] for plural in WATCHED)
            watches = max(figures[f"watches {plural}"] for plural in WATCHED)
            print(
                f"{workers:>7} {label:>13} {figures['master'] / 1024:>10.1f} {figures['watcher'] / 1024:>11.1f} "
                f"{figures['worker'] / 1024:>10.1f} {figures['copy file'] / 1024:>13.1f} {figures['pod'] / 1024:>8.1f} "
                f"{state / 1024:>9.1f} "
                f"{lists:>14.0f} {watches:>16.0f}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--counts", default="0,10000,100000", help="foreign templates per run; the first is the base")
    parser.add_argument("--workers", type=int, default=2, help="server worker processes")
    parser.add_argument("--reviews", type=int, default=200, help="reviews answered before memory is read")
    parser.add_argument("--own", default="", help="own templates per run (the webhook's own work instead)")
    parser.add_argument("--worker-counts", default="2,4", help="with --own: server worker processes per series")
    parser.add_argument("--namespaces", type=int, default=2000, help="with --own: namespaces in the cluster")
    parser.add_argument("--quotas", type=int, default=500, help="with --own: ResourceQuotas in the cluster")
    args = parser.parse_args()
    counts = [int(count) for count in (args.own or args.counts).split(",")]
    work = Path(tempfile.mkdtemp(prefix="dra-migrate-memory-"))
    try:
        write_bundle(create_bundle(service="dra-migrate", namespace="dra-migrate", ip_addresses=["127.0.0.1"]), work)
        if args.own:
            report_own(work, counts, [int(count) for count in args.worker_counts.split(",")], args)
            return 0
        print(f"workers: {args.workers}; reviews per run: {args.reviews}")
        print(
            f"{'foreign templates':>18} {'total RSS MiB':>14} {'ratio':>6} {'largest child MiB':>19} {'ratio':>6} "
            f"{'ready s':>8}"
        )
        base: tuple[int, int] | None = None
        for count in counts:
            total, worker, synced = measure(work, count, args.workers, args.reviews)
            base = base or (total, worker)
            print(
                f"{count:>18,} {total / 1024:>14.1f} {total / base[0]:>6.2f} {worker / 1024:>19.1f} "
                f"{worker / base[1]:>6.2f} {synced:>8.1f}",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
