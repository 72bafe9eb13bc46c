"""Load and chaos against the real server: held connections, a hung Kubernetes API, the review deadline.

Every review must be answered within kube-apiserver's timeout for the webhook (5 s in deploy/base):
that is what the client timeout below enforces. Latency figures belong to bench/webhook.py.
"""

from __future__ import annotations

import http.client
import json
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
from admission import make_review
from fakekube import FakeKube, FakeKubeServer
from pods import gpu_pod
from webhook_support import ServerProcess, StartServer

from dra_migrate.engine import default_config
from dra_migrate.webhook.deadline import MARGIN_SECONDS, REVIEW_SECONDS, review_deadline
from dra_migrate.webhook.envelope import parse_review
from dra_migrate.webhook.resource_api import ApiResource
from dra_migrate.webhook.responses import Outcome
from dra_migrate.webhook.review import Reviewer

APISERVER_TIMEOUT_S = REVIEW_SECONDS  # timeoutSeconds of the MutatingWebhookConfiguration


def tls_context(tls_dir: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))


def connect(port: int, context: ssl.SSLContext) -> http.client.HTTPSConnection:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=APISERVER_TIMEOUT_S)
    connection.connect()
    return connection


def review_once(
    port: int, context: ssl.SSLContext, review: dict[str, Any], connection: http.client.HTTPSConnection | None = None
) -> dict[str, Any]:
    """POST (on a fresh connection unless given one) and read the answer; 5 s at most, as kube-apiserver."""
    connection = connection or connect(port, context)
    try:
        connection.request("POST", "/mutate", json.dumps(review), {"Content-Type": "application/json"})
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()
    assert answer.status == 200, body[:300]
    response: dict[str, Any] = json.loads(body)["response"]
    assert response["uid"] == review["request"]["uid"]
    return response


class HeldConnections:
    """Idle TLS connections (handshake done, nothing sent), slow-header ones (a header line
    every second, never finishing) and plain TCP ones (no handshake), all kept open."""

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        self._port = port
        self._context = context
        self._stack = ExitStack()
        self._slow: list[ssl.SSLSocket] = []
        self._stop = threading.Event()
        self._trickler = threading.Thread(target=self._trickle, daemon=True)
        self.idle = 0

    def _tls(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self._port), timeout=30)
        return self._stack.enter_context(self._context.wrap_socket(raw, server_hostname="127.0.0.1"))

    def open(self, idle_tls: int, slow_headers: int, plain_tcp: int) -> HeldConnections:
        for _ in range(idle_tls):
            self._tls()
            self.idle += 1
        for _ in range(slow_headers):
            connection = self._tls()
            connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n")
            self._slow.append(connection)
        for _ in range(plain_tcp):
            self._stack.enter_context(socket.create_connection(("127.0.0.1", self._port), timeout=30))
        self._trickler.start()
        return self

    def _trickle(self) -> None:
        line = 0
        while not self._stop.wait(1.0):
            line += 1
            for connection in self._slow:
                with suppress(OSError):
                    connection.sendall(b"X-Slow-%d: y\r\n" % line)

    def close(self) -> None:
        self._stop.set()
        if self._trickler.is_alive():
            self._trickler.join()
        self._stack.close()


@pytest.fixture
def fake_api() -> Iterator[FakeKubeServer]:
    with FakeKubeServer() as server:
        yield server


def test_held_connections_do_not_starve_reviews(
    start_server: StartServer, tls_dir: Path, fake_api: FakeKubeServer, tmp_path: Path
) -> None:
    """2,000 idle TLS + 200 slow-header + 200 plain TCP connections; every review still answered in time."""
    server: ServerProcess = start_server(kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig"))
    context = tls_context(tls_dir)
    held = HeldConnections(server.port, context).open(idle_tls=2000, slow_headers=200, plain_tcp=200)
    try:
        for index in range(100):
            response = review_once(server.port, context, make_review(gpu_pod(f"p{index}")))
            assert response["allowed"] and response["patchType"] == "JSONPatch"
        # The probes answer too (the kubelet's, through the same port).
        assert server.session.get(f"{server.url}/readyz", timeout=APISERVER_TIMEOUT_S).status_code == 200
    finally:
        held.close()
    assert "Traceback" not in server.log(), server.log()[-3000:]


def hold_idle_connections(
    port: int, context: ssl.SSLContext, source: str, count: int
) -> tuple[list[ssl.SSLSocket], int]:
    """`count` TLS connections from the local address `source`, handshake done, nothing sent: those
    that completed, and how many the server closed before their handshake."""
    held: list[ssl.SSLSocket] = []
    refused = 0
    for opened in range(count):
        raw = socket.create_connection(("127.0.0.1", port), timeout=APISERVER_TIMEOUT_S, source_address=(source, 0))
        try:
            held.append(context.wrap_socket(raw, server_hostname="127.0.0.1"))
        except TimeoutError:
            raw.close()
            raise AssertionError(f"no handshake after {opened} connections from {source}: no slot left") from None
        except OSError:
            raw.close()
            refused += 1
    return held, refused


def closed_by_server(connections: list[ssl.SSLSocket]) -> list[int]:
    """Indexes of the connections the server has closed (nothing else is ever sent on them)."""
    readable: set[int] = set()
    with selectors.DefaultSelector() as selector:
        for index, connection in enumerate(connections):
            selector.register(connection, selectors.EVENT_READ, index)
        while ready := selector.select(timeout=1.0):  # until none more for a second
            for key, _ in ready:
                readable.add(key.data)
                selector.unregister(key.fileobj)
    closed = []
    for index in sorted(readable):
        connections[index].settimeout(1.0)
        try:
            ended = connections[index].recv(1) == b""
        except OSError:
            ended = True
        if ended:
            closed.append(index)
    return closed


def test_idle_connections_of_a_few_clients_cannot_take_every_slot(
    start_server: StartServer, tls_dir: Path, fake_api: FakeKubeServer, tmp_path: Path
) -> None:
    """One worker, 4,000 connection slots. Three client addresses each open 2,500 idle TLS
    connections: each keeps its share (2,000) at most, a new connection over it taking the place of
    the address's longest idle one (nobody behind an address is locked out by what others there
    hold), and the longest idle ones are closed when slots run short, so the kubelet's probe and a
    review on new connections are answered at once. Before, the first 4,000 took every slot and both
    timed out."""
    server: ServerProcess = start_server(kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig"), workers=1)
    context = tls_context(tls_dir)
    held: dict[str, list[ssl.SSLSocket]] = {}
    try:
        for source in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
            held[source], refused = hold_idle_connections(server.port, context, source, 2_500)
            assert refused == 0  # every handshake done
        assert server.session.get(f"{server.url}/readyz", timeout=APISERVER_TIMEOUT_S).status_code == 200
        assert review_once(server.port, context, make_review(gpu_pod("after")))["allowed"]
        closed = {source: closed_by_server(connections) for source, connections in held.items()}
        for source, connections in held.items():
            # The longest idle of each address, oldest first; at most its share still open.
            assert closed[source] == list(range(len(closed[source]))), source
            assert len(connections) - len(closed[source]) <= 2_000
        # Whenever 3,800 were open, down to 3,600 (400 free).
        still_open = sum(len(connections) - len(closed[source]) for source, connections in held.items())
        assert 3_600 <= still_open <= 3_800
        metrics = server.session.get(f"{server.url}/metrics", timeout=APISERVER_TIMEOUT_S).text
        counted = {
            line.split('"')[1]: float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("dra_migrate_webhook_connections_closed_total{")
        }
        # One more closed: the kept-alive connection the readiness wait opened, the oldest of all.
        assert sum(counted.values()) == sum(len(indexes) for indexes in closed.values()) + 1
        assert counted["client_over_share"] >= 500
    finally:
        for connections in held.values():
            for connection in connections:
                connection.close()
    assert "Traceback" not in server.log(), server.log()[-3000:]


def test_plain_tcp_connections_without_a_handshake_are_closed(
    start_server: StartServer, fake_api: FakeKubeServer, tmp_path: Path
) -> None:
    server: ServerProcess = start_server(kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig"), workers=1)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as silent:
        # The server gives up on the handshake after its deadline and closes: EOF, not a hang.
        assert silent.recv(1) == b""


def warm_both_workers(port: int, context: ssl.SSLContext, fake: FakeKube, namespace: str) -> dict[str, Any]:
    """A review that both worker processes answer from their watched copies of the cluster (its
    namespace and template known): 20 in a row with no API call on their behalf."""
    review = make_review(gpu_pod("cached"), namespace=namespace)
    quiet = 0
    for _ in range(400):
        before = len(fake.calls)
        assert review_once(port, context, review)["allowed"]
        called = [
            c for c in fake.calls[before:] if "watch=true" not in c[1] and "limit=" not in c[1] and c[1] != "/version"
        ]
        quiet = 0 if called else quiet + 1
        if quiet == 20:
            return review
    raise AssertionError("the workers never answered the review without an API call")


class StuckReviews:
    """`count` reviews of templates nobody knows yet, sent at once on connections opened beforehand
    (TLS done, as from a busy apiserver); each answer or exception is kept, in finishing order."""

    def __init__(self, port: int, context: ssl.SSLContext, count: int) -> None:
        self._connections = [connect(port, context) for _ in range(count)]
        self._port = port
        self._context = context
        self.answers: dict[int, dict[str, Any] | BaseException] = {}
        self.finished: list[str] = []
        self.lock = threading.Lock()
        self._threads = [threading.Thread(target=self._send, args=(index,)) for index in range(count)]

    def _send(self, index: int) -> None:
        review = make_review(gpu_pod(f"p{index}"), namespace=f"team-{index}")
        try:
            answer: dict[str, Any] | BaseException = review_once(
                self._port, self._context, review, self._connections[index]
            )
        except BaseException as exc:  # recorded and asserted by the test
            answer = exc
        with self.lock:
            self.answers[index] = answer
            self.finished.append("stuck")

    def start(self) -> StuckReviews:
        for thread in self._threads:
            thread.start()
        return self

    def join(self) -> None:
        for thread in self._threads:
            thread.join()


def hung_api_server(
    start_server: StartServer, fake_api: FakeKubeServer, tmp_path: Path, **policy: Any
) -> ServerProcess:
    return start_server(
        kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig"),
        config={"webhook": policy},
    )


@pytest.mark.parametrize("decision", ["admit", "deny"])
def test_hung_api_with_200_concurrent_reviews(
    start_server: StartServer, tls_dir: Path, fake_api: FakeKubeServer, tmp_path: Path, decision: str
) -> None:
    """The API stops answering: each of 200 concurrent reviews gets the apiUnavailable decision in time."""
    server = hung_api_server(start_server, fake_api, tmp_path, apiUnavailable=decision)
    context = tls_context(tls_dir)
    stuck = StuckReviews(server.port, context, 200)
    fake_api.fake.delay = 60.0  # every API call now hangs, like a stopped kube-apiserver
    stuck.start().join()

    failures = {index: answer for index, answer in stuck.answers.items() if isinstance(answer, BaseException)}
    assert not failures, (
        f"{len(failures)} reviews not answered in {APISERVER_TIMEOUT_S} s: {list(failures.items())[:3]}"
    )
    for answer in stuck.answers.values():
        assert isinstance(answer, dict)
        if decision == "admit":
            assert answer["allowed"] and "patch" not in answer
            assert "WITHOUT conversion" in answer["warnings"][0]
        else:
            assert not answer["allowed"] and answer["status"]["code"] == 503


def test_known_template_does_not_wait_behind_reviews_stuck_on_the_api(
    start_server: StartServer, tls_dir: Path, fake_api: FakeKubeServer, tmp_path: Path
) -> None:
    """40 reviews wait on a hung API (3 s each); one whose template both workers know comes back first."""
    fake_api.fake.add_namespace("cached")  # in the watched copy, like every namespace of a real cluster
    server = hung_api_server(start_server, fake_api, tmp_path, apiUnavailable="admit", apiTimeoutSeconds=3)
    context = tls_context(tls_dir)
    cached = warm_both_workers(server.port, context, fake_api.fake, "cached")
    stuck = StuckReviews(server.port, context, 40)
    fake_api.fake.delay = 60.0
    calls_before = len(fake_api.fake.calls)
    stuck.start()
    deadline = time.monotonic() + APISERVER_TIMEOUT_S
    while len(fake_api.fake.calls) - calls_before < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(fake_api.fake.calls) - calls_before == 40 and not stuck.finished, "the 40 never all waited on the API"
    response = review_once(server.port, context, cached)
    with stuck.lock:
        stuck.finished.append("cached")
    stuck.join()
    assert response["allowed"] and response["patchType"] == "JSONPatch"
    assert stuck.finished.index("cached") == 0, "the review with a known template waited behind the stuck ones"
    assert all(isinstance(answer, dict) and answer["allowed"] for answer in stuck.answers.values())


def test_no_api_call_starts_after_the_deadline() -> None:
    """A review that reaches the API step with its time used up answers apiUnavailable and calls nothing."""
    fake = FakeKube()
    reviewer = Reviewer.for_api(default_config(), fake)
    request = parse_review(make_review(gpu_pod()))
    with review_deadline(time.monotonic() - (REVIEW_SECONDS - MARGIN_SECONDS)):
        decision = reviewer.review(request)
    assert decision.outcome is Outcome.DENIED_API_UNAVAILABLE
    assert fake.calls == []
    # With time left, the same review converts and creates its template.
    with review_deadline(time.monotonic()):
        assert reviewer.review(request).outcome is Outcome.PATCHED
    assert fake.calls_to("POST") == 1


def test_api_budget_is_cut_to_the_time_left() -> None:
    class SlowApi(FakeKube):
        timeouts: list[float]

        def get(self, resource: ApiResource, namespace: str | None, name: str, timeout: float) -> dict[str, Any] | None:
            self.timeouts.append(timeout)
            return super().get(resource, namespace, name, timeout)

    fake = SlowApi()
    fake.timeouts = []
    reviewer = Reviewer.for_api(default_config(), fake)
    with review_deadline(time.monotonic() - (REVIEW_SECONDS - MARGIN_SECONDS - 0.3)):
        reviewer.review(parse_review(make_review(gpu_pod())))
    assert fake.timeouts and fake.timeouts[0] <= 0.3
