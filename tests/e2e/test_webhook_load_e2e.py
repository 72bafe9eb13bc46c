"""Capacity through the real apiserver: held connections and a hung Kubernetes API under concurrency.

The webhook process (fixture `webhook`) is the real `dra-migrate serve` registered through deploy/'s
MutatingWebhookConfiguration (timeoutSeconds 5, failurePolicy Fail). Pods are created through the
real kube-apiserver, which calls the webhook and gives up on it after timeoutSeconds.
"""

from __future__ import annotations

import copy
import json
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from pods import gpu_pod

from .cluster_fixtures import Kube
from .controlplane import ControlPlane
from .webhook_process import LocalWebhook

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"


@pytest.fixture(autouse=True)
def _default_webhook(webhook: LocalWebhook) -> Iterator[None]:
    webhook.ensure_default()
    yield


def is_converted(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    limits = (spec["containers"][0].get("resources") or {}).get("limits") or {}
    return bool(spec.get("resourceClaims")) and GPU not in limits


class HeldConnections:
    """Idle TLS connections and slow-header ones to the webhook's port, held open."""

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        self._port = port
        self._context = context
        self._stack = ExitStack()
        self._slow: list[ssl.SSLSocket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)

    def _tls(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self._port), timeout=30)
        return self._stack.enter_context(self._context.wrap_socket(raw, server_hostname="127.0.0.1"))

    def __enter__(self) -> HeldConnections:
        for _ in range(2000):
            self._tls()
        for _ in range(200):
            connection = self._tls()
            connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n")
            self._slow.append(connection)
        self._thread.start()
        return self

    def _trickle(self) -> None:
        line = 0
        while not self._stop.wait(1.0):
            line += 1
            for connection in self._slow:
                with suppress(OSError):
                    connection.sendall(b"X-Slow-%d: y\r\n" % line)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._stack.close()


def test_held_connections_do_not_block_pod_creation(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    """2,000 idle TLS and 200 slow-header connections to the webhook: GPU pods are still converted."""
    context = webhook.server.tls.client_context()
    with HeldConnections(webhook.server.port, context):
        for index in range(20):
            created = kube.create(gpu_pod(f"held-{index}"), namespace)
            assert is_converted(created), created["spec"]


class PausableProxy:
    """A TCP relay to kube-apiserver; `hang()` stops relaying (bytes sit unanswered, as with a
    stopped apiserver whose sockets stay open), `resume()` relays again."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.port = int(self._listener.getsockname()[1])
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def hang(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed.set()
        self._flowing.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with suppress(OSError):
                    sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while not self._closed.is_set():
                self._flowing.wait()
                ready, _, _ = select.select([source], [], [], 0.1)
                if not ready or not self._flowing.is_set():
                    continue
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        for sock in (source, sink):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def proxied_kubeconfig(plane: ControlPlane, port: int, path: Path) -> Path:
    """The admin kubeconfig with the server address replaced by the relay's (same certificates)."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def webhook_api_through(webhook: LocalWebhook, kubeconfig: Path, config: Obj) -> Iterator[None]:
    """Restart the webhook with its own Kubernetes API calls going through `kubeconfig`."""
    original = webhook.server.kubeconfig
    webhook.server.kubeconfig = kubeconfig
    try:
        with webhook.running_with("api-through-relay", config):
            yield
    finally:
        webhook.server.kubeconfig = original
        webhook.restart(webhook.default_config)


def upstream_address(plane: ControlPlane) -> tuple[str, int]:
    server = plane.server.removeprefix("https://")
    host, _, port = server.rpartition(":")
    return host.strip("[]"), int(port)


@pytest.mark.parametrize("decision", ["deny", "admit"])
def test_200_concurrent_pods_with_the_api_hung_are_decided_by_api_unavailable(
    kube: Kube, namespace: str, webhook: LocalWebhook, control_plane: ControlPlane, decision: str
) -> None:
    """The webhook's API calls hang; 200 pods created at once through the apiserver each get the
    configured apiUnavailable decision, never the apiserver's own timeout. The 200 new connections'
    handshakes share the 2 cores with the control plane and the rest of the suite: when the worker's
    queue stands for a whole interval it refuses what comes after (webhook/shedding.py), and each
    such pod gets the webhook's own quick overload answer, counted in its metrics, instead."""
    proxy = PausableProxy(upstream_address(control_plane))
    config = copy.deepcopy(yaml.safe_load(webhook.default_config.read_text())) or {}
    # One second per API call (deploy/base: 2) leaves the rest of the 5 s to the burst of 200
    # handshakes and reviews on a machine whose 2 cores also run the control plane and the test.
    config.setdefault("webhook", {}).update({"apiUnavailable": decision, "apiTimeoutSeconds": 1})
    try:
        kubeconfig = proxied_kubeconfig(control_plane, proxy.port, webhook.workdir / "kubeconfig-relay")
        with webhook_api_through(webhook, kubeconfig, config):
            proxy.hang()

            def create(index: int) -> Obj | ApiException:
                try:
                    return kube.create(gpu_pod(f"outage-{index}"), namespace)
                except ApiException as exc:
                    return exc

            with ThreadPoolExecutor(max_workers=200) as pool:
                outcomes = list(pool.map(create, range(200)))
            refused = [outcome for outcome in outcomes if OVERLOADED in _message(outcome)]
            # A worker counts a refusal once it has sent it: wait for the count of the last few.
            deadline = time.monotonic() + 10
            while (shed := webhook.reviews().get("shed_overloaded", 0.0)) < len(refused):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            proxy.resume()
    finally:
        proxy.close()

    assert len(refused) == shed, f"{len(refused)} pods refused as overloaded, {shed} refusals counted"
    decided = [outcome for outcome in outcomes if OVERLOADED not in _message(outcome)]
    assert decided, "every pod was refused as overloaded: the decision was never made"
    for outcome in decided:
        if decision == "deny":
            assert isinstance(outcome, ApiException), outcome
            message = _message(outcome)
            assert "apiUnavailable: deny" in message, message
            # Not the apiserver's own "failed calling webhook ...: context deadline exceeded".
            assert "failed calling webhook" not in message, message
        else:
            assert isinstance(outcome, dict), getattr(outcome, "body", outcome)
            assert not is_converted(outcome)
            assert (outcome["spec"]["containers"][0]["resources"]["limits"] or {}).get(GPU) == "1"


# What kube-apiserver reports of the webhook's 429 (dra_migrate/webhook/app.py: OVERLOADED_RESPONSE).
OVERLOADED = "dra-migrate is overloaded and did not review this pod"


def _message(outcome: Obj | ApiException) -> str:
    """The apiserver's message for a refused create; "" for a created pod."""
    if isinstance(outcome, ApiException):
        return str(json.loads(outcome.body or "{}").get("message"))
    return ""


def _replicaset(name: str, replicas: int) -> Obj:
    pod = gpu_pod(name)
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod["spec"]},
        },
    }


def test_a_200_pod_replicaset_is_converted_without_a_refusal(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    """A burst is not an overload: a ReplicaSet of 200 GPU pods, created by kube-controller-manager
    as fast as it may, each reviewed on whatever connection the apiserver has or opens. Every pod is
    converted and the webhook refuses none (its shedding waits for a queue that stands, not one that
    drains)."""
    shed_before = webhook.reviews().get("shed_overloaded", 0.0)
    kube.create(_replicaset("burst", 200), namespace)
    deadline = time.monotonic() + 180
    pods: list[Obj] = []
    while time.monotonic() < deadline:
        pods = kube.list("v1", "Pod", namespace, label_selector="app=burst")
        if len(pods) == 200:
            break
        time.sleep(1.0)
    assert len(pods) == 200, len(pods)
    assert all(is_converted(pod) for pod in pods)
    assert webhook.reviews().get("shed_overloaded", 0.0) == shed_before
