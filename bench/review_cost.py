"""What one review costs inside the webhook's process: the WSGI app answering `/mutate` with no HTTP
parsing, TLS or waking up around it, and the parts of that work, in CPU time and, with
`--callgrind`, in instructions executed (valgrind's callgrind, which does not move with the
machine's speed as time does).

    python bench/review_cost.py [--repeat 5000] [--callgrind]

The review is bench/webhook.py's GPU pod of a ReplicaSet; the app reads the cluster from watched
copies of an in-memory API (current, as in a running server, so no review calls the API): as a
worker of `serve` reads them, from the file a watcher keeps (webhook/sharedcopy.py, here the
watcher is a thread), and for comparison from copies in the process's memory. It counts its metrics
in this process rather than in gunicorn's shared files. The served figures of
bench/webhook.py add gunicorn and TLS to this; the bare `/mutate-noop` endpoint, measured here too,
is the envelope alone (read the body, parse it, answer allowed).

A served review also pays for waking up: between two reviews at 300/s the process sleeps 3.3 ms,
and the review that follows runs on cold caches. The same review is timed with the process idle
between reviews as long as at 1,000/s and at 300/s, next to what a wake-up alone costs (the sleep
without the review): what is left is the review itself, slower than back to back.

Instructions per review are the difference between two runs of the whole review that differ only in
how many reviews they make, divided by that difference: start-up and imports cancel out.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "common"))
sys.path.insert(0, str(ROOT / "bench"))

from fakekube import FakeKube, shared_watch, synced_watch  # noqa: E402
from webhook import gpu_pod_review  # noqa: E402

from dra_migrate.engine import convert, default_config  # noqa: E402
from dra_migrate.webhook.app import create_app  # noqa: E402
from dra_migrate.webhook.review import Reviewer  # noqa: E402

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Any]
CALLGRIND_RUNS = (100, 300)  # reviews in the two runs whose difference is counted
# Under callgrind the process runs about this many times slower: a worker's reads of the copy's state,
# at most one per sharedcopy.STATE_SECONDS of wall time, are spaced as much longer to stay as few
# per review as when it runs at full speed.
CALLGRIND_SLOWDOWN = 50
# Idle time between two reviews, as at 1,000 and 300 reviews per second; and reviews timed at each.
IDLE_GAPS = {"1,000/s": 0.001, "300/s": 0.0033}
SPACED_REVIEWS = 1000


def _app(shared: bool = False) -> tuple[WSGIApp, Callable[[], None]]:
    """The webhook's WSGI app on current watched copies of an empty in-memory API, in the file of a
    watcher (`shared`) or in this process's memory; and its stop."""
    api = FakeKube()
    api.add_namespace("ml")  # the review's namespace, known to the watched copy as in a cluster
    directory = Path(tempfile.mkdtemp(prefix="review-cost-"))
    if shared:
        caches, stop_watching = shared_watch(api, directory, timeout=10)
    else:
        caches = synced_watch(api, timeout=10)
        stop_watching = caches.stop
    reviewer = Reviewer.for_api(default_config(), api, caches=caches)
    app: WSGIApp = create_app(reviewer, noop_route=True).wsgi_app

    def stop() -> None:
        stop_watching()
        shutil.rmtree(directory, ignore_errors=True)

    return app, stop


def _call(app: WSGIApp, path: str, body: bytes) -> bytes:
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    status: list[str] = []
    answer = b"".join(app(environ, lambda line, headers, exc_info=None: status.append(line)))
    if not status or not status[0].startswith("200"):
        raise SystemExit(f"{path} answered {status}: {answer[:300]!r}")
    return answer


def _per_call(work: Callable[[], object], repeat: int) -> float:
    """CPU seconds per call of `work`, after a warm-up (the median of three rounds)."""
    for _ in range(max(20, repeat // 20)):
        work()
    rounds = []
    for _ in range(3):
        start = time.process_time()
        for _ in range(repeat):
            work()
        rounds.append((time.process_time() - start) / repeat)
    return sorted(rounds)[1]


def _per_spaced_call(work: Callable[[], object], idle: float, count: int) -> tuple[float, float]:
    """CPU seconds per call of `work` with the process asleep for `idle` seconds between calls, and
    per wake-up alone (the same sleeps without the work)."""
    start = time.process_time()
    for _ in range(count):
        work()
        time.sleep(idle)
    spaced = (time.process_time() - start) / count
    start = time.process_time()
    for _ in range(count):
        time.sleep(idle)
    return spaced, (time.process_time() - start) / count


def cpu_figures(repeat: int) -> dict[str, float]:
    """Microseconds of CPU per review, whole and by part."""
    # Imported here: the whole-review runs (--reviews-only) use nothing a version of the webhook
    # without them lacks, so that they count another checkout too (PYTHONPATH=<checkout>).
    from dra_migrate.engine import changes
    from dra_migrate.webhook.patch import json_patch

    app, stop = _app(shared=True)
    in_memory, stop_in_memory = _app(shared=False)
    try:
        body = gpu_pod_review()
        answer = json.loads(_call(app, "/mutate", body))
        if "patch" not in answer["response"]:
            raise SystemExit(f"the review was not converted: {answer}")
        pod = json.loads(body)["request"]["object"]
        config = default_config()
        converted = convert(pod, config).object
        figures = {
            "whole review (/mutate)": _per_call(lambda: _call(app, "/mutate", body), repeat),
            "  copies in memory instead": _per_call(lambda: _call(in_memory, "/mutate", body), repeat),
            "bare endpoint (/mutate-noop)": _per_call(lambda: _call(app, "/mutate-noop", body), repeat),
            "parse the body (json.loads)": _per_call(lambda: json.loads(body), repeat),
            "convert the pod (engine)": _per_call(lambda: convert(pod, config), repeat),
            "change set + JSON Patch": _per_call(lambda: json_patch(changes(pod, converted)), repeat),
        }
        for rate, idle in IDLE_GAPS.items():
            spaced, wake_up = _per_spaced_call(lambda: _call(app, "/mutate", body), idle, SPACED_REVIEWS)
            figures[f"whole review, idle as at {rate}"] = spaced
            figures[f"  of which waking up ({idle * 1000:g} ms)"] = wake_up
    finally:
        stop()
        stop_in_memory()
    return {name: seconds * 1e6 for name, seconds in figures.items()}


def _reviews_only(count: int, shared: bool) -> None:
    """The child run under callgrind: `count` whole reviews after one warm-up review, on copies in
    the watcher's file (`shared`) or in memory (which every version of the webhook has)."""
    if shared:
        from dra_migrate.webhook import sharedcopy

        sharedcopy.STATE_SECONDS *= CALLGRIND_SLOWDOWN
    app, stop = _app(shared=shared)
    try:
        body = gpu_pod_review()
        _call(app, "/mutate", body)
        for _ in range(count):
            _call(app, "/mutate", body)
    finally:
        stop()


def _instructions(count: int, valgrind: str, shared: bool) -> int:
    result = subprocess.run(
        [
            valgrind,
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            str(Path(__file__).resolve()),
            "--reviews-only",
            str(count),
            *(["--shared"] if shared else []),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return int(found.group(1))


def instructions_per_review(shared: bool = False) -> float:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--callgrind needs valgrind on PATH (Debian: apt install valgrind)")
    few, many = CALLGRIND_RUNS
    return (_instructions(many, valgrind, shared) - _instructions(few, valgrind, shared)) / (many - few)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5000, help="calls per timed round (default 5000)")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions per review")
    parser.add_argument("--reviews-only", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--shared", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reviews_only is not None:
        _reviews_only(args.reviews_only, args.shared)
        return
    for name, micros in cpu_figures(args.repeat).items():
        print(f"{name:32} {micros:8.1f} us")
    if args.callgrind:
        print(f"{'instructions per review':32} {instructions_per_review(shared=True) / 1e6:8.2f} million")
        print(f"{'  copies in memory instead':32} {instructions_per_review() / 1e6:8.2f} million")


if __name__ == "__main__":
    main()
