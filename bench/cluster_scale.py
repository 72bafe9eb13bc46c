"""GPU pods at cluster scale through the admission webhook: pods/s, the apiserver's admission
latency with and without the webhook, and every pod accounted for.

Two phases, each on a fresh control plane of the e2e harness (tests/e2e: etcd, kube-apiserver,
kube-controller-manager with the job controller added, kube-scheduler; no kubelet):

- `baseline`: no webhook registered;
- `webhook`: --replicas `dra-migrate serve` processes (gunicorn over TLS, deploy/base/config.yaml),
  behind a TCP round-robin relay on loopback that stands for the Service: kube-apiserver calls one
  address, each new connection goes to the next replica. Registered through deploy/'s
  MutatingWebhookConfiguration (tests/e2e/webhook_process.py), its URL the relay's.

Each phase adds --nodes fake nodes that offer GPUs both ways (a ResourceSlice as the NVIDIA DRA
driver publishes it, and `nvidia.com/gpu` in capacity, so the baseline's pods schedule too), then
creates Deployments (1 GPU a pod) and Jobs (2 GPUs a pod) of --per-workload pods each, --pods in all,
and measures:

- pods/s: --pods over the time from the first workload create to every pod existing (pods counted
  with `limit=1` lists, `remainingItemCount`);
- from kube-apiserver's /metrics, the change over the phase of
  `apiserver_admission_webhook_admission_duration_seconds` (CREATE, admit) and
  `apiserver_request_duration_seconds` for pod creates (POST pods): count, mean, p50, p99
  (interpolated in the buckets as histogram_quantile does);
- every pod accounted for: converted (spec.resourceClaims, no `nvidia.com/gpu` left), left
  unchanged, or missing; a missing pod's workload must carry a FailedCreate event with the
  refusal's message, else it is lost;
- CPU seconds of each process over the phase (/proc/<pid>/stat; a webhook replica counts its
  gunicorn master and workers), so a run that falls short shows what limited it.

    python bench/cluster_scale.py [--nodes 500] [--pods 10000] [--replicas 3] [--release 1.37]
                                  [--phases baseline,webhook] [--json FILE]

The control-plane binaries come from tests/e2e/build-control-plane.sh (see tests/e2e/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "common")]

from histograms import latency_change  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402
from pods import gpu_pod  # noqa: E402
from polling import wait_for  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from tests.e2e.binaries import BUILD_SCRIPT, Release, find_binaries, missing_binaries  # noqa: E402
from tests.e2e.cluster_fixtures import (  # noqa: E402
    DEVICE_PLUGIN_RESOURCE,
    Kube,
    NvidiaDraNode,
    add_node,
    create_namespace,
    ensure_device_classes,
)
from tests.e2e.controlplane import ControlPlane, ControlPlaneSpec, remove_workdir  # noqa: E402
from tests.e2e.webhook_process import (  # noqa: E402
    DEPLOY_SERVER_CONFIG,
    E2E_CONFIGURATION_NAME,
    MARKER_NAMESPACE,
    WebhookServer,
    deploy_configuration,
    generate_tls,
    gpu_marker_pod,
    webhook_configuration,
)

Obj = dict[str, Any]
PHASES = ("baseline", "webhook")
MAX_DEVICES_PER_SLICE = 128
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WEBHOOK_METRIC = "apiserver_admission_webhook_admission_duration_seconds"
REQUEST_METRIC = "apiserver_request_duration_seconds"
WEBHOOK_CALLS_METRIC = "apiserver_admission_webhook_request"  # _total{code, rejected}
WEBHOOK_FAILURES_METRIC = "apiserver_admission_webhook_rejection_count"  # {error_type, rejection_code}
REVIEW_METRIC = "dra_migrate_webhook_review_duration_seconds"  # the webhook's own time per review
CLOSED_METRIC = "dra_migrate_webhook_connections_closed"  # _total{reason}: closed by the webhook to free slots


# --------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class ScaleNode(NvidiaDraNode):
    """GPUs published as a ResourceSlice and as `nvidia.com/gpu` capacity: converted pods and
    unconverted ones (the baseline) both schedule."""

    mig_parents: int = 0

    def extended_resources(self) -> dict[str, str]:
        return {DEVICE_PLUGIN_RESOURCE: str(self.gpus)}


@dataclass(frozen=True)
class Workload:
    kind: str  # Deployment | Job
    name: str
    pods: int
    gpus_per_pod: int

    def manifest(self) -> Obj:
        labels = {"app": self.name}
        spec = gpu_pod(self.name, self.gpus_per_pod)["spec"]
        spec["restartPolicy"] = "Always" if self.kind == "Deployment" else "Never"
        template = {"metadata": {"labels": labels}, "spec": spec}
        if self.kind == "Deployment":
            return {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": self.name},
                "spec": {"replicas": self.pods, "selector": {"matchLabels": labels}, "template": template},
            }
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": self.name},
            "spec": {"parallelism": self.pods, "completions": self.pods, "backoffLimit": 0, "template": template},
        }


def plan_workloads(pods: int, per_workload: int) -> list[Workload]:
    """Deployments (1 GPU a pod) and Jobs (2 GPUs a pod) in turn, `per_workload` pods each."""
    workloads: list[Workload] = []
    left = pods
    for index in itertools.count():
        if left <= 0:
            return workloads
        size = min(per_workload, left)
        kind, gpus = ("Deployment", 1) if index % 2 == 0 else ("Job", 2)
        workloads.append(Workload(kind, f"{kind.lower()}-{index}", size, gpus))
        left -= size
    raise AssertionError("unreachable")


def gpus_per_node(workloads: Sequence[Workload], nodes: int) -> int:
    """Enough GPUs for every pod with a quarter to spare, within one ResourceSlice."""
    needed = sum(w.pods * w.gpus_per_pod for w in workloads)
    return min(MAX_DEVICES_PER_SLICE, math.ceil(needed * 1.25 / nodes) + 1)


def add_nodes(kube: Kube, count: int, gpus: int) -> None:
    ensure_device_classes(kube)
    specs = [ScaleNode(f"scale-node-{index}", gpus=gpus, pods="250") for index in range(count)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda spec: add_node(kube, spec), specs))


# --------------------------------------------------------------------------- raw API reads


@dataclass
class Api:
    """JSON reads of kube-apiserver with the admin certificate (large lists without the dynamic
    client's per-object wrapping)."""

    server: str
    context: ssl.SSLContext

    def get(self, path: str) -> Obj:
        return dict(json.loads(self.text(path)))

    def text(self, path: str) -> str:
        with urllib.request.urlopen(f"{self.server}{path}", context=self.context, timeout=60) as response:
            return str(response.read().decode())

    def pages(self, path: str, limit: int = 500) -> Iterator[Obj]:
        token = ""
        while True:
            separator = "&" if "?" in path else "?"
            page = self.get(f"{path}{separator}limit={limit}" + (f"&continue={token}" if token else ""))
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

    def count(self, path: str) -> int:
        """Objects of a list, from one item and `remainingItemCount` when the server gives it."""
        page = self.get(f"{path}?limit=1")
        metadata = page.get("metadata") or {}
        if not metadata.get("continue"):
            return len(page.get("items") or [])
        if "remainingItemCount" in metadata:
            return 1 + int(metadata["remainingItemCount"])
        return sum(1 for _ in self.pages(path))


def counter_change(before: str, after: str, family_name: str, by: str) -> dict[str, int]:
    """What a counter gained between two scrapes, per value of the label `by`."""

    def totals(text: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for family in text_string_to_metric_families(text):
            if family.name == family_name:
                for sample in family.samples:
                    if sample.name.endswith("_total") or sample.name == family_name:
                        out[sample.labels.get(by, "")] += int(sample.value)
        return out

    gained = totals(after)
    gained.subtract(totals(before))
    return {key: value for key, value in sorted(gained.items()) if value}


# --------------------------------------------------------------------------- CPU per process


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "; fields from state on


def process_cpu_seconds(pid: int) -> float:
    fields = _stat_fields(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime of every live process of a process group, plus what its exited children used."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and int(fields[2]) == pgid:
            total += sum(int(value) for value in fields[11:15]) / CLOCK_TICKS
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (every process, other users' too)."""
    values = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / CLOCK_TICKS


@dataclass
class CpuMeter:
    """CPU seconds per named process (or process group) between start() and stop()."""

    processes: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    _start: dict[str, float] = field(default_factory=dict)

    def sample(self) -> dict[str, float]:
        values = {name: process_cpu_seconds(pid) for name, pid in self.processes.items()}
        values |= {name: group_cpu_seconds(pgid) for name, pgid in self.groups.items()}
        times = os.times()
        values["bench (relay, poller)"] = times.user + times.system
        values["machine (all processes)"] = machine_busy_seconds()
        return values

    def start(self) -> None:
        self._start = self.sample()

    def stop(self, wall: float) -> Obj:
        end = self.sample()
        used = {name: end[name] - self._start.get(name, 0.0) for name in end}
        return {name: {"cpu_s": round(value, 1), "cores": round(value / wall, 2)} for name, value in used.items()}


# --------------------------------------------------------------------------- the webhook replicas


class RoundRobinRelay:
    """A TCP relay on loopback: each accepted connection goes to the next upstream port in turn
    (what a Service does per connection). TLS passes through untouched."""

    def __init__(self, upstream_ports: Sequence[int]) -> None:
        self._next = itertools.cycle(list(upstream_ports))
        self._writers: set[asyncio.StreamWriter] = set()
        self.connections = 0  # accepted so far: kube-apiserver's new connections to "the Service"
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0, backlog=1024))
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", next(self._next))
        except OSError:
            client_writer.close()
            return
        self._writers |= {client_writer, upstream_writer}
        await asyncio.gather(self._pipe(client_reader, upstream_writer), self._pipe(upstream_reader, client_writer))

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with suppress(OSError, ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with suppress(OSError, ConnectionError):
            writer.close()

    def close(self) -> None:
        """Stop accepting, end the open relays, stop the loop."""
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _shutdown(self) -> None:
        self._server.close()
        # Closing both ends lets each relay return by itself; a cancelled connection handler is
        # reported by asyncio as an error.
        for writer in self._writers:
            writer.close()
        current = asyncio.current_task()
        relays = [task for task in asyncio.all_tasks() if task is not current]
        if relays:
            await asyncio.wait(relays, timeout=5)


@dataclass
class Replicas:
    servers: list[WebhookServer]
    relay: RoundRobinRelay

    def review_counts(self) -> list[int]:
        return [server.review_count() for server in self.servers]

    def reviews(self) -> list[dict[str, float]]:
        return [server.reviews() for server in self.servers]

    def metrics(self) -> str:
        """Every replica's /metrics, one after the other."""
        return "\n".join(server.metrics() for server in self.servers)


@contextmanager
def webhook_replicas(plane: ControlPlane, kube: Kube, count: int) -> Iterator[Replicas]:
    """`count` serve processes with one certificate, the relay in front, deploy/'s configuration
    registered with the relay's URL; ready once a dry-run GPU pod has been reviewed."""
    workdir = plane.workdir / "webhook"
    tls = generate_tls(workdir / "tls")
    servers = [
        WebhookServer(
            tls=tls,
            kubeconfig=plane.kubeconfig,
            log_path=plane.log_dir / f"dra-migrate-webhook-{index}.log",
            workdir=workdir / f"replica-{index}",
        )
        for index in range(count)
    ]
    relay: RoundRobinRelay | None = None
    try:
        for server in servers:
            server.start(DEPLOY_SERVER_CONFIG)
        relay = RoundRobinRelay([server.port for server in servers])
        replicas = Replicas(servers, relay)
        registered = webhook_configuration(
            deploy_configuration(plane), url=f"https://127.0.0.1:{relay.port}/mutate", ca_bundle=tls.ca_bundle
        )
        kube.create(registered)

        def reviewed() -> bool:
            before = sum(replicas.review_counts())
            with suppress(ApiException):
                kube.create(gpu_marker_pod(), MARKER_NAMESPACE, dry_run="All")
            return sum(replicas.review_counts()) > before

        wait_for(reviewed, what="kube-apiserver to call the webhook through the relay", timeout=60, interval=0.5)
        yield replicas
    finally:
        kube.delete("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", E2E_CONFIGURATION_NAME)
        if relay is not None:
            relay.close()
        for server in servers:
            server.stop()


# --------------------------------------------------------------------------- one phase


@dataclass(frozen=True)
class Settings:
    release: Release
    nodes: int
    pods: int
    per_workload: int
    replicas: int
    controller_qps: int
    stall_s: float
    keep: bool


def pod_counts(api: Api, namespace: str, expected: int, stall_s: float) -> tuple[float | None, float, int]:
    """Poll the namespace's pod count from now until `expected` exist or it has not grown for
    `stall_s`: (seconds to the first pod, seconds to the last count change, the count)."""
    start = time.monotonic()
    first: float | None = None
    last_change, count, reported = start, 0, start
    while True:
        now_count = api.count(f"/api/v1/namespaces/{namespace}/pods")
        now = time.monotonic()
        if now_count != count:
            count, last_change = now_count, now
            if first is None and count:
                first = now - start
        if now - reported >= 10:
            print(f"  {now - start:6.0f}s  {count}/{expected} pods", file=sys.stderr, flush=True)
            reported = now
        if count >= expected or now - last_change >= stall_s:
            return first, last_change - start, count
        time.sleep(0.5)


def is_converted(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    still = any(DEVICE_PLUGIN_RESOURCE in ((c.get("resources") or {}).get("limits") or {}) for c in containers)
    return bool(spec.get("resourceClaims")) and not still


def account(api: Api, namespace: str, workloads: Sequence[Workload]) -> Obj:
    """Every expected pod: converted, unchanged, or missing with its workload's refusal messages."""
    deployment_of = {
        rs["metadata"]["uid"]: ref["name"]
        for rs in api.pages(f"/apis/apps/v1/namespaces/{namespace}/replicasets")
        for ref in rs["metadata"].get("ownerReferences") or []
        if ref.get("kind") == "Deployment"
    }
    replicaset_of = {
        rs["metadata"]["name"]: deployment_of.get(rs["metadata"]["uid"], "")
        for rs in api.pages(f"/apis/apps/v1/namespaces/{namespace}/replicasets")
    }
    existing: Counter[str] = Counter()
    converted: Counter[str] = Counter()
    bound = 0
    for pod in api.pages(f"/api/v1/namespaces/{namespace}/pods"):
        owner: Obj = next(iter(pod["metadata"].get("ownerReferences") or []), {})
        owner_name = str(deployment_of.get(owner.get("uid", ""), owner.get("name", "")))
        existing[owner_name] += 1
        converted[owner_name] += is_converted(pod)
        bound += bool(pod["spec"].get("nodeName"))
    reasons: dict[str, Counter[str]] = {}
    for event in api.pages(f"/api/v1/namespaces/{namespace}/events?fieldSelector=reason%3DFailedCreate"):
        involved = event.get("involvedObject") or {}
        name = replicaset_of.get(involved.get("name", ""), "") if involved.get("kind") == "ReplicaSet" else ""
        name = name or involved.get("name", "")
        reasons.setdefault(name, Counter())[event.get("message", "")] += int(event.get("count") or 1)
    refused: dict[str, Obj] = {}
    lost = 0
    for workload in workloads:
        missing = max(0, workload.pods - existing[workload.name])
        if missing and workload.name in reasons:
            refused[workload.name] = {"missing": missing, "reasons": dict(reasons[workload.name].most_common(3))}
        else:
            lost += missing
    return {
        "expected": sum(w.pods for w in workloads),
        "existing": sum(existing.values()),
        "converted": sum(converted.values()),
        "unchanged": sum(existing.values()) - sum(converted.values()),
        "bound_at_end": bound,
        "refused": refused,
        "lost": lost,
    }


def run_phase(phase: str, settings: Settings, binaries: Mapping[str, Path]) -> Obj:
    workdir = Path(tempfile.mkdtemp(prefix=f"dra-migrate-scale-{phase}-"))
    qps = settings.controller_qps
    plane = ControlPlane(
        binaries,
        workdir,
        ControlPlaneSpec(settings.release),
        extra_controllers=["job-controller"],
        extra_controller_manager_args=[f"--kube-api-qps={qps}", f"--kube-api-burst={2 * qps}"],
    )
    print(f"[{phase}] control plane {settings.release} in {workdir}", file=sys.stderr, flush=True)
    plane.start()
    api_client = plane.new_api_client()
    try:
        kube = Kube(api_client, discovery_cache=workdir / "discovery-cache.json")
        api = Api(plane.server, plane.admin_tls_context())
        workloads = plan_workloads(settings.pods, settings.per_workload)
        gpus = gpus_per_node(workloads, settings.nodes)
        started = time.monotonic()
        add_nodes(kube, settings.nodes, gpus)
        print(f"[{phase}] {settings.nodes} nodes x {gpus} GPUs in {time.monotonic() - started:.0f}s", file=sys.stderr)
        webhook: AbstractContextManager[Replicas | None] = (
            webhook_replicas(plane, kube, settings.replicas) if phase == "webhook" else nullcontext(None)
        )
        with webhook as replicas:
            result = measure(phase, plane, kube, api, workloads, settings, replicas)
        return {**result, "gpus_per_node": gpus}
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
        plane.stop()
        if not settings.keep:
            remove_workdir(workdir)


def measure(
    phase: str,
    plane: ControlPlane,
    kube: Kube,
    api: Api,
    workloads: Sequence[Workload],
    settings: Settings,
    replicas: Replicas | None,
) -> Obj:
    namespace = create_namespace(kube, prefix=f"scale-{phase}")
    meter = CpuMeter(processes={p.name: p.popen.pid for p in plane.processes if p.popen is not None})
    if replicas is not None:
        meter.groups = {f"webhook-{i}": s.process.pid for i, s in enumerate(replicas.servers) if s.process is not None}
    metrics_before = api.text("/metrics")
    reviews_before = replicas.review_counts() if replicas is not None else []
    webhook_metrics_before = replicas.metrics() if replicas is not None else ""
    connections_before = replicas.relay.connections if replicas is not None else 0
    meter.start()
    started = time.monotonic()
    for workload in workloads:
        kube.create(workload.manifest(), namespace)
    first, last, count = pod_counts(api, namespace, sum(w.pods for w in workloads), settings.stall_s)
    wall = time.monotonic() - started
    cpu = meter.stop(wall)
    metrics_after = api.text("/metrics")
    expected = sum(w.pods for w in workloads)
    result: Obj = {
        "phase": phase,
        "namespace": namespace,
        "workloads": {kind: sum(1 for w in workloads if w.kind == kind) for kind in ("Deployment", "Job")},
        "pods_existing": count,
        "seconds_to_first_pod": None if first is None else round(first, 1),
        "seconds_to_all_pods": round(last, 1) if count >= expected else None,
        "pods_per_second": round(count / last, 1) if last > 0 else None,
        "admission_webhook": latency_change(
            metrics_before, metrics_after, WEBHOOK_METRIC, {"operation": "CREATE", "type": "admit"}
        ),
        # Calls the apiserver made, by HTTP code (0: no answer, e.g. the timeout), and the calls
        # that failed, by why; the controllers retry a pod whose create failed.
        "webhook_calls_by_code": counter_change(metrics_before, metrics_after, WEBHOOK_CALLS_METRIC, "code"),
        "webhook_failures_by_type": counter_change(
            metrics_before, metrics_after, WEBHOOK_FAILURES_METRIC, "error_type"
        ),
        "pod_create": latency_change(
            metrics_before, metrics_after, REQUEST_METRIC, {"verb": "POST", "resource": "pods", "subresource": ""}
        ),
        "cpu": cpu,
        "accounting": account(api, namespace, workloads),
    }
    if replicas is not None:
        after = replicas.review_counts()
        result["reviews_per_replica"] = [a - b for a, b in zip(after, reviews_before, strict=True)]
        result["webhook_connections"] = replicas.relay.connections - connections_before
        result["review_outcomes"] = replicas.reviews()
        webhook_metrics_after = replicas.metrics()
        result["webhook_review_time"] = latency_change(webhook_metrics_before, webhook_metrics_after, REVIEW_METRIC, {})
        result["webhook_connections_closed"] = counter_change(
            webhook_metrics_before, webhook_metrics_after, CLOSED_METRIC, "reason"
        )
    return result


# --------------------------------------------------------------------------- report


def summary(result: Obj) -> str:
    accounting = result["accounting"]
    lines = [
        f"[{result['phase']}] {result['pods_existing']}/{accounting['expected']} pods in "
        f"{result['seconds_to_all_pods'] or '-'} s: {result['pods_per_second']} pods/s "
        f"(first pod after {result['seconds_to_first_pod']} s)",
        f"  converted {accounting['converted']}, unchanged {accounting['unchanged']}, "
        f"refused {sum(r['missing'] for r in accounting['refused'].values())}, lost {accounting['lost']}, "
        f"bound at the end {accounting['bound_at_end']}",
    ]
    for name, key in (("webhook admission", "admission_webhook"), ("pod create", "pod_create")):
        lat = result[key]
        lines.append(
            f"  {name}: n={lat['count']} mean={lat['mean_ms']} ms p50={lat['p50_ms']} ms p99={lat['p99_ms']} ms "
            f"(in bucket {lat['p99_bucket_ms']})"
        )
    lines.append(
        f"  webhook calls by code {result['webhook_calls_by_code']}, failed {result['webhook_failures_by_type']}"
    )
    if "reviews_per_replica" in result:
        own = result["webhook_review_time"]
        lines.append(
            f"  reviews per replica: {result['reviews_per_replica']} over {result['webhook_connections']} "
            f"new connections (closed by the webhook: {result['webhook_connections_closed']}); "
            "the webhook's own time per review: "
            f"mean={own['mean_ms']} ms p50={own['p50_ms']} ms p99={own['p99_ms']} ms"
        )
    for workload, refusal in accounting["refused"].items():
        lines.append(f"  refused {workload}: {refusal['missing']} missing: {refusal['reasons']}")
    cpu = ", ".join(f"{name} {v['cpu_s']} s ({v['cores']} cores)" for name, v in result["cpu"].items())
    lines.append(f"  CPU: {cpu}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--per-workload", type=int, default=250, help="pods per Deployment or Job (default 250)")
    parser.add_argument("--replicas", type=int, default=3, help="webhook processes (default 3)")
    parser.add_argument("--release", default="1.37", help="Kubernetes minor of the control plane (default 1.37)")
    parser.add_argument("--phases", default=",".join(PHASES), help="baseline,webhook (default both, in that order)")
    parser.add_argument(
        "--controller-qps",
        type=int,
        default=200,
        help="kube-controller-manager --kube-api-qps (burst twice that; its default 20 caps each controller "
        "at 20 creates/s)",
    )
    parser.add_argument("--stall", type=float, default=60.0, help="stop waiting when no pod appeared for this long")
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--keep", action="store_true", help="keep each control plane's work directory (logs)")
    args = parser.parse_args(argv)
    unknown = set(args.phases.split(",")) - set(PHASES)
    if unknown:
        parser.error(f"--phases: unknown {sorted(unknown)}; choose from {', '.join(PHASES)}")
    if min(args.nodes, args.pods, args.per_workload, args.replicas) < 1:
        parser.error("--nodes, --pods, --per-workload and --replicas must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    release = Release(args.release)
    binaries = find_binaries(release)
    if binaries is None:
        print(
            f"Kubernetes {release} binaries missing ({', '.join(missing_binaries(release))}): "
            f"run {BUILD_SCRIPT} --release {release}",
            file=sys.stderr,
        )
        return 2
    settings = Settings(
        release=release,
        nodes=args.nodes,
        pods=args.pods,
        per_workload=args.per_workload,
        replicas=args.replicas,
        controller_qps=args.controller_qps,
        stall_s=args.stall,
        keep=args.keep,
    )
    report: Obj = {
        "release": release.kubernetes,
        "nodes": args.nodes,
        "pods": args.pods,
        "per_workload": args.per_workload,
        "replicas": args.replicas,
        "controller_qps": args.controller_qps,
        "cpus": os.cpu_count(),
        "phases": {},
    }
    for phase in args.phases.split(","):
        result = run_phase(phase, settings, binaries)
        report["phases"][phase] = result
        print(summary(result), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
