"""Admission webhook throughput, latency and CPU over TLS on loopback, next to a bare endpoint.

Starts the real server, `dra-migrate serve --noop-route` with its production defaults (gunicorn,
gevent worker, 2 processes), certificates from certs/ and a fake Kubernetes API
(tests/common/fakekube.py: the first review creates the ResourceClaimTemplate, the cache answers
after that). The load generator is vegeta (Go), built from the Go module proxy into
`${DRA_MIGRATE_CACHE:-~/.cache/dra-migrate}/tools` on first use. It sends a GPU pod
AdmissionReview as kube-apiserver does (HTTP/1.1, defaulted fields, service-account volume)
open-loop at fixed rates, opening the connections it needs itself (up to --max-connections,
kept alive, as client-go does), with a 5 s timeout: the webhook's timeoutSeconds.

Loads: POST /mutate (the real conversion) with one review, sent again and again; POST /mutate
with the pods of one ReplicaSet as kube-apiserver sends them, --replicas of them in turn: they
differ only in the service-account token volume, which the ServiceAccount admission plugin names
`kube-api-access-<5 random characters>` before any webhook sees the pod; and POST /mutate-noop
(the same gunicorn, TLS, Flask and envelope parsing, answering `allowed: true`). Per step:
achieved rate, latency percentiles (vegeta's, from the scheduled send time), failures (timeouts counted apart), and CPU:
the server's processes per review, vegeta's, and the machine's busy cores, since generator and
server share the machine's cores (2 on the project's machines). Then, with 2,000 idle TLS
connections and 200 slow-header connections held open, the latency of reviews at a low rate.

With --uploads K, first K clients upload large reviews slowly, starting again as soon as one ends,
and the server's resident memory (every process) is compared with the deploy's 512 MiB limit; with
--rates '' nothing else runs.

    python bench/webhook.py [--rates 300,600,800,1000,1500,2000] [--duration 10] [--held-rate 50] [--replicas 2000]
    python bench/webhook.py --pinned --overload 4
    python bench/webhook.py --uploads 120 --rates ''
"""

from __future__ import annotations

import argparse
import base64
import csv
import http.client
import io
import json
import math
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The in-memory Kubernetes API the tests use stands in for the real one here too.
sys.path.insert(0, str(ROOT / "tests" / "common"))

from admission import make_review  # noqa: E402
from fakekube import FakeKubeServer  # noqa: E402
from histograms import latency_change  # noqa: E402
from polling import wait_while_running  # noqa: E402

from dra_migrate.certs.generate import create_bundle, write_bundle  # noqa: E402

VEGETA_MODULE = "github.com/tsenart/vegeta/v12"
VEGETA_VERSION = "v12.13.0"
SAME, REPLICAS, BARE = "/mutate", "/mutate replicas", "/mutate-noop"
# The characters kube-apiserver's names.SimpleNameGenerator draws from (k8s.io/apimachinery util/rand).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
TIMEOUT = "5s"  # timeoutSeconds of the MutatingWebhookConfiguration
REPLICASET_CONTROLLER = {
    "username": "system:serviceaccount:kube-system:replicaset-controller",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
}


def token_volume(replica: int) -> str:
    """The service-account token volume's name for the `replica`-th pod (5 characters, as generated)."""
    suffix = ""
    for _ in range(5):
        replica, digit = divmod(replica, len(NAME_ALPHABET))
        suffix += NAME_ALPHABET[digit]
    return f"kube-api-access-{suffix}"


def gpu_pod_review(replica: int = 0) -> bytes:
    """The `replica`-th GPU pod of a Deployment's ReplicaSet as kube-apiserver sends it (defaults
    and the service-account token volume already added)."""
    volume = token_volume(replica)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "trainer-7d9f8b6c5-",
            "namespace": "ml",
            "labels": {"app": "trainer", "pod-template-hash": "7d9f8b6c5"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "trainer-7d9f8b6c5",
                    "uid": "2b5d4f0e-8d6c-4d6e-9b1e-3c9f1f2a7e11",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "trainer",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "command": ["python", "/workspace/train.py", "--epochs", "10"],
                    "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "OMP_NUM_THREADS", "value": "4"}],
                    "resources": {
                        "limits": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "16Gi"},
                        "requests": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "16Gi"},
                    },
                    "volumeMounts": [
                        {"name": volume, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{t}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for t in ("not-ready", "unreachable")
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "volumes": [
                {
                    "name": volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
        },
    }
    # As the ReplicaSet controller creates it: kube-apiserver names the user that made the request.
    review = make_review(pod, namespace="ml", user_info=REPLICASET_CONTROLLER)
    return json.dumps(review).encode()


# --- vegeta ---


def vegeta_binary() -> Path:
    """vegeta from the cache, built with `go install` (Go module proxy) when missing."""
    cache = Path(os.environ.get("DRA_MIGRATE_CACHE") or Path.home() / ".cache" / "dra-migrate")
    binary = cache / "tools" / f"vegeta-{VEGETA_VERSION}"
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise SystemExit("vegeta is not built and there is no `go` to build it (install Go 1.22+)")
    with tempfile.TemporaryDirectory() as gobin:
        print(f"building vegeta {VEGETA_VERSION} with go install ...", flush=True)
        env = {**os.environ, "GOBIN": gobin, "GOFLAGS": "-mod=mod"}
        subprocess.run([go, "install", f"{VEGETA_MODULE}@{VEGETA_VERSION}"], check=True, env=env, cwd=gobin)
        binary.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(gobin) / "vegeta"), binary)
    return binary


@dataclass(frozen=True)
class Load:
    """What vegeta sends: POSTs to `path`, cycling through the `bodies` in turn."""

    name: str
    path: str
    bodies: tuple[Path, ...]


@dataclass(frozen=True)
class Attack:
    vegeta: Path
    work: Path
    port: int
    ca_file: Path
    max_connections: int
    keepalive: bool = True  # False: a new TLS connection for every request
    cpus: frozenset[int] = frozenset()  # vegeta's CPUs (empty: any)


@dataclass(frozen=True)
class Result:
    sent_ns: int  # when vegeta's pacer sent it (Unix ns)
    code: int  # HTTP status, 0 when there was no answer
    latency_ns: int
    error: str
    allowed: bool  # the review's answer said allowed: true (a refusal under overload says false)


def attack(setup: Attack, load: Load, rate: float, duration: float) -> tuple[list[Result], float]:
    """One fixed-rate vegeta run: every request's result, and the CPU seconds vegeta used."""
    targets = setup.work / "targets.txt"
    targets.write_text(
        "\n".join(
            f"POST https://127.0.0.1:{setup.port}{load.path}\nContent-Type: application/json\n@{body}\n"
            for body in load.bodies
        )
    )
    results = setup.work / "results.bin"
    command = [
        str(setup.vegeta),
        "attack",
        f"-targets={targets}",
        f"-rate={rate:g}/s",
        f"-duration={duration:g}s",
        f"-timeout={TIMEOUT}",
        f"-root-certs={setup.ca_file}",
        "-http2=false",
        f"-keepalive={'true' if setup.keepalive else 'false'}",
        f"-max-connections={setup.max_connections}",
        "-max-body=160",  # enough for `"allowed":...`
        f"-output={results}",
    ]
    cpus = set(setup.cpus)
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    process = subprocess.Popen(command, stderr=subprocess.PIPE, preexec_fn=pin)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode() if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"vegeta attack failed: {stderr}")
    encoded = subprocess.run(
        [str(setup.vegeta), "encode", "-to=csv", str(results)], check=True, capture_output=True, text=True
    )
    # Columns: Unix ns, status, latency ns, bytes out, bytes in, error, base64 body, ... (`vegeta encode -h`).
    rows = csv.reader(io.StringIO(encoded.stdout))
    parsed = [
        Result(int(row[0]), int(row[1]), int(row[2]), row[5], b'"allowed":true' in base64.b64decode(row[6]))
        for row in rows
        if row
    ]
    return parsed, usage.ru_utime + usage.ru_stime


# --- measurement ---


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine since boot (Linux /proc/stat)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_tree_cpu(pid: int) -> float:
    """utime + stime of `pid` and its children, in seconds (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


@dataclass(frozen=True)
class Step:
    load: str
    offered: float
    achieved: float  # successful reviews per second
    requests: int
    ok: int
    timeouts: int
    refused: int  # answered at once with 429 (retry) while the server ran behind
    other_errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    refused_p99_ms: float  # how fast the 429s came
    server_ms_per_review: float  # server CPU per successful review
    server_cpu_s: float  # the server's CPU seconds over the whole step, refusals included
    generator_ms_per_request: float
    machine_busy: float  # cores busy on average, everything included
    # the same percentiles for the requests sent after the step's first second: the load as it
    # stands, without the moments in which it began
    steady_p99_ms: float = math.nan
    steady_refused_p99_ms: float = math.nan

    def sustained(self, p99_limit_ms: float) -> bool:
        return self.achieved >= 0.95 * self.offered and self.p99_ms <= p99_limit_ms and self.failures == 0

    @property
    def failures(self) -> int:
        return self.timeouts + self.refused + self.other_errors


def percentile(values: list[int], fraction: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


# A step starts once the server has finished the previous one's work (a saturated step leaves
# requests queued whose clients gave up), so that no step measures another's leftovers.
SETTLED_BUSY = 0.05  # of a core, over SETTLE_POLL_SECONDS
SETTLE_POLL_SECONDS = 0.25
SETTLE_LIMIT_SECONDS = 30.0
STEADY_AFTER_NS = 1_000_000_000


def converted(result: Result) -> bool:
    return result.code == 200 and not result.error and result.allowed


def settle(server_pid: int) -> float:
    """Wait until the server's processes are about idle; the seconds waited."""
    started = time.monotonic()
    before = process_tree_cpu(server_pid)
    while time.monotonic() - started < SETTLE_LIMIT_SECONDS:
        time.sleep(SETTLE_POLL_SECONDS)
        now = process_tree_cpu(server_pid)
        if now - before <= SETTLED_BUSY * SETTLE_POLL_SECONDS:
            break
        before = now
    return time.monotonic() - started


def measure(setup: Attack, server_pid: int, load: Load, rate: float, duration: float) -> Step:
    settle(server_pid)
    server_before, machine_before, wall_before = process_tree_cpu(server_pid), machine_cpu(), time.monotonic()
    results, generator_cpu = attack(setup, load, rate, duration)
    server_cpu = process_tree_cpu(server_pid) - server_before
    busy = (machine_cpu() - machine_before) / (time.monotonic() - wall_before)
    ok = [r for r in results if converted(r)]
    refused = sum(1 for r in results if r.code == 429)  # shed at once: an HTTP 429 while the server ran behind
    timeouts = sum(1 for r in results if "Timeout" in r.error or "deadline exceeded" in r.error)
    latencies = [r.latency_ns for r in ok]
    first = min((r.sent_ns for r in results), default=0)
    last = max((r.sent_ns + r.latency_ns for r in ok), default=first)
    elapsed = (last - first) / 1e9
    ms = 1e-6
    steady = [r for r in results if r.sent_ns - first >= STEADY_AFTER_NS]
    return Step(
        load=load.name,
        offered=rate,
        achieved=len(ok) / elapsed if elapsed > 0 else 0.0,
        requests=len(results),
        ok=len(ok),
        timeouts=timeouts,
        refused=refused,
        other_errors=len(results) - len(ok) - timeouts - refused,
        p50_ms=percentile(latencies, 0.50) * ms,
        p99_ms=percentile(latencies, 0.99) * ms,
        max_ms=max(latencies, default=0) * ms,
        refused_p99_ms=percentile([r.latency_ns for r in results if r.code == 429], 0.99) * ms,
        server_ms_per_review=server_cpu / len(ok) * 1000 if ok else math.nan,
        server_cpu_s=server_cpu,
        generator_ms_per_request=generator_cpu / len(results) * 1000 if results else math.nan,
        machine_busy=busy,
        steady_p99_ms=percentile([r.latency_ns for r in steady if converted(r)], 0.99) * ms,
        steady_refused_p99_ms=percentile([r.latency_ns for r in steady if r.code == 429], 0.99) * ms,
    )


def print_header() -> None:
    print(
        f"{'load':<17} {'offered':>7} {'achieved':>9} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'timeouts':>8} {'429s':>6} {'429 p99':>7} {'errors':>6} {'srv CPU/review':>14} {'gen CPU/req':>11} "
        f"{'busy cores':>10}",
        flush=True,
    )


def print_step(step: Step) -> None:
    print(
        f"{step.load:<17} {step.offered:>7.0f} {step.achieved:>9.1f} {step.p50_ms:>7.2f} {step.p99_ms:>7.2f} "
        f"{step.max_ms:>7.1f} {step.timeouts:>8} {step.refused:>6} {step.refused_p99_ms:>7.2f} {step.other_errors:>6} "
        f"{step.server_ms_per_review:>11.3f} ms "
        f"{step.generator_ms_per_request:>8.3f} ms {step.machine_busy:>10.2f}",
        flush=True,
    )


# --- held connections ---


class HeldConnections:
    """Idle TLS connections (handshake done, nothing sent) and slow-header ones (a header line a
    second, never finished), opened from a thread of this process and kept until `close`."""

    def __init__(self, port: int, ca_file: Path) -> None:
        self._port = port
        self._context = ssl.create_default_context(cafile=str(ca_file))
        self._stack = ExitStack()
        self._slow: list[ssl.SSLSocket] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _tls(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self._port), timeout=30)
        return self._stack.enter_context(self._context.wrap_socket(raw, server_hostname="127.0.0.1"))

    def open(self, idle: int, slow: int) -> None:
        for _ in range(idle):
            self._tls()
        for _ in range(slow):
            connection = self._tls()
            connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n")
            self._slow.append(connection)
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _trickle(self) -> None:
        line = 0
        while not self._stop.wait(1.0):
            line += 1
            for connection in self._slow:
                with suppress(OSError):
                    connection.sendall(b"X-Slow-%d: y\r\n" % line)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._stack.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _https_get(port: int, ca_file: Path, path: str) -> tuple[int, bytes] | None:
    """Status and body of GET `path` on the local TLS server; None while it does not answer."""
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=2)
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read()
    except (OSError, http.client.HTTPException):
        return None


# --- what OpenSSL alone costs per new connection ---


FLOOR_BODY = "ok\n"


@dataclass(frozen=True)
class TlsFloor:
    server_ms_per_connection: float  # openssl s_server's CPU per new TLS connection and tiny GET
    connections: int  # made in the run (s_time makes one at a time)


def openssl_floor(
    work: Path, seconds: float, server_cpus: set[int] | None, client_cpus: frozenset[int]
) -> TlsFloor | str:
    """New TLS connections, each with one small GET, to OpenSSL's own server (C, no Python) on the
    bench's certificate, from OpenSSL's `s_time`: a floor for what a new connection costs the server
    on this machine with this OpenSSL (its kernel work included), whatever serves it. Or why not."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return "no `openssl` command"
    port = _free_port()
    (work / "floor.txt").write_text(FLOOR_BODY)
    server_cmd = [openssl, "s_server", "-quiet", "-WWW", "-no_ticket", "-accept", f"127.0.0.1:{port}"]
    server_cmd += ["-cert", str(work / "tls.crt"), "-key", str(work / "tls.key")]
    pin = (lambda: os.sched_setaffinity(0, server_cpus)) if server_cpus else None
    server = subprocess.Popen(
        server_cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=pin
    )
    try:
        served = (200, FLOOR_BODY.encode())
        try:
            wait_while_running(
                lambda: _https_get(port, work / "ca.crt", "/floor.txt") == served,
                server.poll,
                what="openssl s_server to serve /floor.txt",
                log=lambda: "(its output is not kept)",
                timeout=10,
            )
        except AssertionError as failed:
            return str(failed)
        before = process_tree_cpu(server.pid)
        client_pin = (lambda: os.sched_setaffinity(0, client_cpus)) if client_cpus else None
        client_cmd = [openssl, "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-tls1_3", "-www", "/floor.txt"]
        result = subprocess.run(
            [*client_cmd, "-time", str(max(1, round(seconds)))],
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=client_pin,
        )
        server_cpu = process_tree_cpu(server.pid) - before
    finally:
        server.terminate()
        server.wait(timeout=10)
    found = re.search(r"(\d+) connections in \d+ real seconds, (\d+) bytes read per connection", result.stdout)
    if result.returncode != 0 or found is None or not int(found.group(1)):
        return f"openssl s_time failed ({result.returncode}): {(result.stdout + result.stderr)[-500:]}"
    # each connection read the small answer: a status line, one header, the body (an error page is longer)
    if not len(FLOOR_BODY) < int(found.group(2)) < 200:
        return f"openssl s_time read {found.group(2)} bytes per connection, not the floor's small answer"
    connections = int(found.group(1))
    return TlsFloor(server_cpu / connections * 1000, connections)


# --- memory against slow or large uploads ---

# deploy/base and the chart's values: the webhook container's memory limit.
MEMORY_LIMIT_BYTES = 512 * 1024 * 1024


def process_tree_rss(pid: int) -> int:
    """Resident memory of `pid` and its children, in bytes (Linux /proc)."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(status.split("VmRSS:", 1)[1].split()[0]) * 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def large_review(size: int) -> bytes:
    """A GPU pod's review of about `size` bytes, most of it managedFields (parsed like any review)."""
    review = json.loads(gpu_pod_review())
    fields: dict[str, dict[str, str]] = {f"f:note-{index}": {} for index in range(size // 20)}
    entry = {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    review["request"]["object"]["metadata"]["managedFields"] = [
        {**entry, "fieldsV1": {"f:metadata": {"f:annotations": fields}}}
    ]
    return json.dumps(review).encode()


@dataclass(frozen=True)
class Uploads:
    clients: int
    size: int
    sent: int  # uploads begun
    statuses: dict[str, int]  # answers (HTTP status, or how the connection ended), counted
    idle_rss: int
    peak_rss: int
    after_rss: int  # a second after the last upload ended


def slow_uploads(port: int, ca_file: Path, server_pid: int, clients: int, size: int, seconds: float) -> Uploads:
    """`clients` connections each upload a review of `size` bytes in pieces over 3 s (within the
    server's 5 s for a body), starting again as soon as one is answered or cut, for `seconds`; the
    server's resident memory sampled meanwhile."""
    body = large_review(size)
    head = (
        b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    context = ssl.create_default_context(cafile=str(ca_file))
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    until = time.monotonic() + seconds
    pieces = 30

    def upload() -> str:
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(head)
            step = len(body) // pieces + 1
            for start in range(0, len(body), step):
                conn.sendall(body[start : start + step])
                time.sleep(3.0 / pieces)
            answer = conn.recv(64)
            return answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"

    def client() -> None:
        while time.monotonic() < until:
            try:
                outcome = upload()
            except OSError as exc:
                outcome = type(exc).__name__
            with lock:
                statuses[outcome] = statuses.get(outcome, 0) + 1

    idle = process_tree_rss(server_pid)
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    peak = idle
    while any(thread.is_alive() for thread in threads):
        peak = max(peak, process_tree_rss(server_pid))
        time.sleep(0.05)
    time.sleep(1.0)
    return Uploads(clients, len(body), sum(statuses.values()), statuses, idle, peak, process_tree_rss(server_pid))


def print_uploads(run: Uploads) -> None:
    mib = 1024 * 1024
    met = run.peak_rss < MEMORY_LIMIT_BYTES
    print(
        f"\n{run.clients} clients uploading {run.size / mib:.1f} MiB reviews slowly, again and again: "
        f"{run.sent} uploads, answers {dict(sorted(run.statuses.items()))}; server memory (all processes) "
        f"idle {run.idle_rss / mib:.0f} MiB, peak {run.peak_rss / mib:.0f} MiB, a second after "
        f"{run.after_rss / mib:.0f} MiB; under the {MEMORY_LIMIT_BYTES // mib} MiB limit: "
        f"{'met' if met else 'NOT met'}",
        flush=True,
    )


# --- the server ---


def start_server(
    work: Path, kubeconfig: Path, workers: int, cpus: set[int] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    entry = Path(sys.executable).with_name("dra-migrate")
    command = [str(entry)] if entry.exists() else [sys.executable, "-m", "dra_migrate"]
    command += ["serve", "--cert", str(work / "tls.crt"), "--key", str(work / "tls.key"), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--kubeconfig", str(kubeconfig), "--noop-route", "--log-level", "warning"]
    if workers:
        command += ["--workers", str(workers)]
    log = (work / "serve.log").open("wb")
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None  # the workers inherit it
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin)
    try:
        wait_while_running(
            lambda: (_https_get(port, work / "ca.crt", "/readyz") or (0,))[0] == 200,
            process.poll,
            what="the server's GET /readyz to answer 200",
            log=lambda: (work / "serve.log").read_text(),
            timeout=30,
        )
    except AssertionError as failed:
        raise SystemExit(f"server not ready: {failed}") from None
    return process, port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rates", default="300,600,800,1000,1500,2000", help="offered reviews/s, ascending")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per rate (default: 10)")
    parser.add_argument("--max-connections", type=int, default=100, help="vegeta's connection limit")
    parser.add_argument("--fresh", action="store_true", help="a new TLS connection per request (no keep-alive)")
    parser.add_argument(
        "--pinned",
        action="store_true",
        help="one worker on the last CPU and vegeta on the others, so that neither takes the other's CPU",
    )
    parser.add_argument("--p99-ms", type=float, default=1000.0, help="p99 limit for a sustained rate")
    parser.add_argument("--workers", type=int, default=0, help="server worker processes (default: serve's)")
    parser.add_argument("--held-idle", type=int, default=2000, help="idle TLS connections held (0: skip)")
    parser.add_argument("--held-slow", type=int, default=200, help="slow-header connections held")
    parser.add_argument("--held-rate", type=float, default=50.0, help="review rate while they are held")
    parser.add_argument("--replicas", type=int, default=2000, help="pods of the ReplicaSet sent in turn")
    parser.add_argument("--uploads", type=int, default=0, help="clients uploading large reviews slowly (0: skip)")
    parser.add_argument("--upload-mib", type=float, default=9.0, help="size of each uploaded review, MiB")
    parser.add_argument(
        "--overload",
        default="2,4",
        help="multiples of the highest rate /mutate sustained to offer next, for load shedding (e.g. 4; '' to skip)",
    )
    args = parser.parse_args()
    rates = [float(rate) for rate in args.rates.split(",") if rate]
    cpus = sorted(os.sched_getaffinity(0))
    server_cpus = {cpus[-1]} if args.pinned and len(cpus) > 1 else None
    if server_cpus:
        args.workers = 1
        os.sched_setaffinity(0, set(cpus[:-1]))  # this process (the fake API) stays off the server's CPU

    vegeta = vegeta_binary()
    work = Path(tempfile.mkdtemp(prefix="dra-migrate-bench-"))
    bundle = create_bundle(service="dra-migrate", namespace="dra-migrate", ip_addresses=["127.0.0.1"])
    write_bundle(bundle, work)
    body = gpu_pod_review()
    (work / "review.json").write_bytes(body)
    replicas = []
    for replica in range(1, args.replicas + 1):
        replicas.append(work / f"review-{replica}.json")
        replicas[-1].write_bytes(gpu_pod_review(replica))
    same = Load(SAME, "/mutate", (work / "review.json",))
    loads = (same, Load(REPLICAS, "/mutate", tuple(replicas)), Load(BARE, "/mutate-noop", same.bodies))
    with FakeKubeServer() as fake:
        fake.fake.add_namespace("ml")  # in the server's watched copy: reviews read no namespace from the API
        process, port = start_server(work, fake.write_kubeconfig(work / "kubeconfig"), args.workers, server_cpus)
        generator_cpus = frozenset(cpus[:-1]) if server_cpus else frozenset()
        setup = Attack(vegeta, work, port, work / "ca.crt", args.max_connections, not args.fresh, generator_cpus)
        try:
            shared = f"server on CPU {cpus[-1]}, generator on the others" if server_cpus else "shared by both"
            print(
                f"CPUs: {len(cpus)} ({shared}); server: dra-migrate serve defaults"
                f"{f' --workers {args.workers}' if args.workers else ''}; generator: vegeta {VEGETA_VERSION}, "
                f"HTTP/1.1 {'a new connection per request' if args.fresh else 'keep-alive'}, up to "
                f"{args.max_connections or 'unlimited'} connections, timeout {TIMEOUT}; "
                f"{args.duration:g} s per rate; review body {len(body)} bytes",
                flush=True,
            )
            if args.uploads:
                size = int(args.upload_mib * 1024 * 1024)
                print_uploads(slow_uploads(port, work / "ca.crt", process.pid, args.uploads, size, args.duration))
                if not rates:
                    return 0
            print_header()
            steps: dict[str, list[Step]] = {}
            for load in loads:
                attack(setup, load, 200, 2.0)  # warm-up: workers, caches, the one template creation
                steps[load.name] = []
                for rate in rates:
                    step = measure(setup, process.pid, load, rate, args.duration)
                    steps[load.name].append(step)
                    print_step(step)
            overload = overloaded(setup, process.pid, same, steps[SAME], args) if args.overload else []
            held = held_connections(setup, process.pid, same, args) if args.held_idle else None
            summarize(steps, held, args.p99_ms, fake.fake.calls_to("POST"), fresh=args.fresh)
            if args.fresh:
                floor = openssl_floor(work, args.duration, server_cpus, generator_cpus)
                summarize_fresh(steps[SAME], floor, args.p99_ms)
            summarize_overload(overload)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
            shutil.rmtree(work, ignore_errors=True)
    return 0


@dataclass(frozen=True)
class Overload:
    multiple: float
    capacity: float  # the highest rate sustained, which `multiple` multiplies
    review_ms: float  # server CPU per review at that rate
    step: Step
    recovery_ms: float  # the slowest of the reviews sent one by one right after
    # the bounds (ms) of the server's histogram bucket holding the refusals' p99, from arrival to 429
    server_refused_p99_ms: list[float] | None = None

    @property
    def goodput(self) -> float:
        """Reviews converted per second, as a fraction of the rate sustained without overload."""
        return self.step.achieved / self.capacity

    @property
    def refusal_ms(self) -> float:
        """Server CPU per refusal: what the step used beyond its reviews at their unloaded cost."""
        step = self.step
        if not step.refused:
            return math.nan
        beyond = step.server_cpu_s * 1000 - step.ok * self.review_ms
        # nan when the reviews cost less under load than at the rate sustained (fewer wake-ups)
        return beyond / step.refused if beyond > 0 else math.nan

    @property
    def cpu_needed(self) -> float:
        """Cores the target takes at this multiple: OVERLOAD_GOODPUT of the rate sustained served,
        the rest refused, at the measured costs (one worker has one core)."""
        served = OVERLOAD_GOODPUT * self.capacity
        refused = self.multiple * self.capacity - served
        return (served * self.review_ms + refused * self.refusal_ms) / 1000

    @property
    def met(self) -> bool:
        step = self.step
        refusals_fast = step.refused == 0 or step.refused_p99_ms <= OVERLOAD_REFUSED_P99_MS
        return (
            step.timeouts == 0
            and self.goodput >= OVERLOAD_GOODPUT
            and refusals_fast
            and step.p99_ms <= OVERLOAD_ANSWERED_P99_MS
        )


# Targets under overload: every request answered before kube-apiserver gives up, most of the rate
# sustained still converted, refusals at once, answers well within the webhook's timeout.
OVERLOAD_GOODPUT = 0.9
OVERLOAD_REFUSED_P99_MS = 100.0
OVERLOAD_ANSWERED_P99_MS = 1000.0


def overloaded(
    setup: Attack, server_pid: int, load: Load, steps: list[Step], args: argparse.Namespace
) -> list[Overload]:
    """`load` at multiples of the highest rate it sustained, each followed by reviews one at a time."""
    sustained = [s for s in steps if s.sustained(args.p99_ms)]
    capacity = max((s.offered for s in sustained), default=0.0)
    if not capacity:
        print("\nno rate was sustained: no overload steps")
        return []
    multiples = [float(m) for m in args.overload.split(",") if m]
    print(f"\noverload: {', '.join(f'{m:g}x' for m in multiples)} the highest rate sustained ({capacity:.0f}/s)")
    print_header()
    out = []
    for multiple in multiples:
        before = server_metrics(setup)
        step = measure(setup, server_pid, load, capacity * multiple, args.duration)
        in_server = latency_change(before, server_metrics(setup), REFUSAL_METRIC, {})["p99_bucket_ms"]
        print_step(step)
        review_ms = next(s.server_ms_per_review for s in sustained if s.offered == capacity)
        out.append(Overload(multiple, capacity, review_ms, step, recovery_ms(setup, load), in_server))
    return out


REFUSAL_METRIC = "dra_migrate_webhook_refusal_duration_seconds"


def server_metrics(setup: Attack) -> str:
    """The server's /metrics text; "" when it does not answer."""
    answer = _https_get(setup.port, setup.ca_file, "/metrics")
    return answer[1].decode() if answer is not None and answer[0] == 200 else ""


def recovery_ms(setup: Attack, load: Load) -> float:
    """The slowest of 20 reviews sent one after another on one kept-alive connection."""
    context = ssl.create_default_context(cafile=str(setup.ca_file))
    connection = http.client.HTTPSConnection("127.0.0.1", setup.port, context=context, timeout=10)
    body = load.bodies[0].read_bytes()
    slowest = 0.0
    try:
        connection.connect()
        for _ in range(20):
            started = time.perf_counter()
            connection.request("POST", load.path, body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            slowest = max(slowest, (time.perf_counter() - started) * 1000)
            if answer.status != 200:
                return math.inf
    finally:
        connection.close()
    return slowest


def in_server(bucket: list[float] | None) -> str:
    """The bucket of the server's histogram that holds a p99, as text."""
    return "none" if bucket is None else f"{bucket[0]:g}-{bucket[1]:g} ms"


def summarize_overload(overload: list[Overload]) -> None:
    if not overload:
        return
    print(
        f"overload (targets: 0 timeouts, goodput >= {OVERLOAD_GOODPUT:.0%} of the rate sustained, "
        f"429 p99 <= {OVERLOAD_REFUSED_P99_MS:g} ms, answered p99 <= {OVERLOAD_ANSWERED_P99_MS:g} ms):"
    )
    for run in overload:
        step = run.step
        print(
            f"  {run.multiple:g}x ({step.offered:.0f}/s): {'met' if run.met else 'NOT met'}: {step.achieved:.0f}/s "
            f"converted ({run.goodput:.0%} of {run.capacity:.0f}/s), p99 {step.p99_ms:.1f} ms; {step.refused} refused, "
            f"p99 {step.refused_p99_ms:.1f} ms ({in_server(run.server_refused_p99_ms)} of it in the server, "
            f"from arrival to 429); {step.timeouts} timeouts, {step.other_errors} other failures; "
            f"next reviews at most {run.recovery_ms:.1f} ms"
        )
        print(
            f"    after the first second: answered p99 {step.steady_p99_ms:.1f} ms, 429 p99 "
            f"{step.steady_refused_p99_ms:.1f} ms; server CPU per refusal {run.refusal_ms:.3f} ms, per review "
            f"{run.review_ms:.3f} ms (1/{run.review_ms / run.refusal_ms if run.refusal_ms > 0 else math.nan:.0f}); "
            f"serving {OVERLOAD_GOODPUT:.0%} of "
            f"{run.capacity:.0f}/s and refusing the rest of {step.offered:.0f}/s takes {run.cpu_needed:.2f} cores "
            "at these costs, of the 1 a pinned worker has"
        )


def held_connections(setup: Attack, server_pid: int, load: Load, args: argparse.Namespace) -> Step:
    held = HeldConnections(setup.port, setup.ca_file)
    started = time.monotonic()
    held.open(args.held_idle, args.held_slow)
    print(
        f"\nholding {args.held_idle} idle TLS + {args.held_slow} slow-header connections "
        f"(opened in {time.monotonic() - started:.1f} s); reviews at {args.held_rate:g}/s:",
        flush=True,
    )
    try:
        step = measure(setup, server_pid, load, args.held_rate, args.duration)
    finally:
        held.close()
    print_header()
    print_step(step)
    return step


def step_at(steps: list[Step], rate: float) -> Step | None:
    return next((s for s in steps if s.offered == rate), None)


def summarize(
    steps: dict[str, list[Step]], held: Step | None, p99_limit: float, template_posts: int, *, fresh: bool = False
) -> None:
    print(f"\ntemplate creations seen by the fake API: {template_posts}")
    for load in (SAME, REPLICAS):
        print(f"{load}:")
        for rate in sorted({s.offered for s in steps[load]}):
            real, bare = step_at(steps[load], rate), step_at(steps[BARE], rate)
            if real and bare:
                print(
                    f"  at {rate:.0f}/s: server CPU per review {real.server_ms_per_review:.3f} ms "
                    f"(bare endpoint {bare.server_ms_per_review:.3f} ms); "
                    f"p99 {real.p99_ms:.2f} ms (bare {bare.p99_ms:.2f} ms)"
                )
    print("targets:")
    for load in (SAME, REPLICAS):
        print(f"{load}:")
        summarize_targets(steps[load], p99_limit, keep_alive=not fresh)
    if held is not None:
        met = held.p99_ms < 1000 and held.failures == 0
        print(
            f"  p99 < 1 s with connections held:         {'met' if met else 'NOT met'} "
            f"({held.p99_ms:.1f} ms, max {held.max_ms:.1f} ms, {held.failures} failures)"
        )


def summarize_targets(steps: list[Step], p99_limit: float, *, keep_alive: bool = True) -> None:
    """The targets for kept-alive connections (the CPU ones only apply to those: see summarize_fresh)."""
    at300 = step_at(steps, 300.0)
    if at300:
        met = at300.p99_ms <= 10 and at300.failures == 0
        print(f"  p99 <= 10 ms at 300/s:                    {'met' if met else 'NOT met'} ({at300.p99_ms:.2f} ms)")
    at2000 = step_at(steps, 2000.0)
    if at2000:
        met = at2000.achieved >= 1500 and at2000.timeouts == 0
        print(
            f"  >= 1,500/s, 0 timeouts at 2,000/s:       {'met' if met else 'NOT met'} "
            f"({at2000.achieved:.0f}/s converted, {at2000.timeouts} timeouts, {at2000.refused} refused with 429, "
            f"{at2000.other_errors} other failures)"
        )
    worst = max((s for s in steps if s.failures == 0), key=lambda s: s.server_ms_per_review, default=None)
    if worst and keep_alive:
        met = worst.server_ms_per_review <= 0.8
        print(
            f"  server CPU per review <= 0.8 ms:          {'met' if met else 'NOT met'} "
            f"(highest {worst.server_ms_per_review:.3f} ms, at {worst.offered:.0f}/s)"
        )
    low = [step for rate in (300.0, 1000.0) if (step := step_at(steps, rate))]
    if low and keep_alive:
        met = all(step.server_ms_per_review <= 0.5 and step.failures == 0 for step in low)
        measured = ", ".join(
            f"{step.server_ms_per_review:.3f} ms at {step.offered:.0f}/s"
            + (f" with {step.failures} failures" if step.failures else "")
            for step in low
        )
        print(f"  server CPU per review <= 0.5 ms at 300/s and 1,000/s: {'met' if met else 'NOT met'} ({measured})")
    best = max((s.offered for s in steps if s.sustained(p99_limit)), default=0)
    print(f"  highest rate sustained (>= 95% achieved, p99 <= {p99_limit:g} ms, no failures): {best:.0f}/s")


def summarize_fresh(steps: list[Step], floor: TlsFloor | str, p99_limit: float) -> None:
    """The targets for a new TLS connection per review, next to what OpenSSL alone costs per connection."""
    print("new TLS connection per review (targets: >= 1,000 reviews/s, <= 1 ms of server CPU per review):")
    best = max((s.offered for s in steps if s.sustained(p99_limit)), default=0.0)
    print(f"  highest rate sustained: {'met' if best >= 1000 else 'NOT met'} ({best:.0f}/s)")
    met = bool(steps) and all(s.server_ms_per_review <= 1.0 and s.failures == 0 for s in steps)
    costs = ", ".join(f"{s.server_ms_per_review:.3f} ms at {s.offered:.0f}/s" for s in steps)
    print(f"  server CPU per review at every rate: {'met' if met else 'NOT met'} ({costs})")
    if isinstance(floor, str):
        print(f"  OpenSSL alone: not measured ({floor})")
        return
    print(
        f"  OpenSSL alone (openssl s_server and s_time, the same certificate, one small GET per connection): "
        f"{floor.server_ms_per_connection:.3f} ms of server CPU per connection ({floor.connections} connections), "
        f"at most {1000 / floor.server_ms_per_connection:.0f} new connections/s per core"
    )


if __name__ == "__main__":
    sys.exit(main())
