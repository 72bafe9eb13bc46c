"""The webhook's memory against what other tenants keep in the cluster: `dra-migrate serve` (real
gunicorn workers over TLS) on the in-memory API holding 0, 10,000 and 100,000 ResourceClaimTemplates
that are not dra-migrate's, each the size of a real one with CEL selectors and an opaque config.

    python bench/webhook_memory.py [--counts 0,10000,100000] [--workers 2] [--reviews 200]

For each count the server starts on a fresh API, its watched copies are listed and watching, it
answers `--reviews` GPU pod reviews (creating its own template), and then the resident memory of the
master and every worker is read from /proc. The figures are printed as they are and as ratios to the
0 case: the webhook watches only its own templates (by label), so they must stay flat.
"""

from __future__ import annotations

import argparse
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


def tree_rss_kib(pid: int) -> dict[int, int]:
    """VmRSS (KiB) of `pid` and its child processes."""
    found: dict[int, int] = {}
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            found[current] = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, ValueError, StopIteration):
            continue
    return found


def measure(work: Path, count: int, workers: int, reviews: int) -> tuple[int, int, float]:
    """(total RSS KiB, largest worker RSS KiB, seconds to start and sync) with `count` foreign templates."""
    fake = FakeKube()
    fake.add_namespace("ml")
    fake.fill(TEMPLATES, [foreign_template(number) for number in range(count)])
    with FakeKubeServer(fake) as served:
        started = time.monotonic()
        process, port = start_server(work, served.write_kubeconfig(work / "kubeconfig"), workers)
        try:
            wait_until(
                lambda: fake.calls_to("GET", "resourceclaimtemplates?watch=true") >= workers,
                timeout=600,
                what="every worker's template watch",
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--counts", default="0,10000,100000", help="foreign templates per run; the first is the base")
    parser.add_argument("--workers", type=int, default=2, help="server worker processes")
    parser.add_argument("--reviews", type=int, default=200, help="reviews answered before memory is read")
    args = parser.parse_args()
    counts = [int(count) for count in args.counts.split(",")]
    work = Path(tempfile.mkdtemp(prefix="dra-migrate-memory-"))
    try:
        write_bundle(create_bundle(service="dra-migrate", namespace="dra-migrate", ip_addresses=["127.0.0.1"]), work)
        print(f"workers: {args.workers}; reviews per run: {args.reviews}")
        print(
            f"{'foreign templates':>18} {'total RSS MiB':>14} {'ratio':>6} {'largest worker MiB':>19} {'ratio':>6} "
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
