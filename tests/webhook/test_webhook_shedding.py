"""Load shedding: a worker refuses a review at once (HTTP 429, no Retry-After) when its queue stands
for longer than a burst, instead of serving every review late. The rule with a fake clock, and a real
server (gunicorn, gevent, TLS) under pipelined reviews far beyond what one worker serves."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

from admission import make_review
from pods import gpu_pod
from webhook_support import StartServer

from dra_migrate.webhook.shedding import (
    INTERVAL_SECONDS,
    LATE_SECONDS,
    REENTER_SECONDS,
    TARGET_SECONDS,
    StandingQueue,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _take(queue: StandingQueue, clock: Clock, sojourn: float, step: float = 0.001) -> bool:
    """A review that arrived `sojourn` ago is taken up `step` after the previous one."""
    clock.now += step
    return queue.refuse(sojourn, clock.now - sojourn)


def test_a_queue_over_the_target_for_less_than_an_interval_refuses_nothing() -> None:
    clock = Clock()
    queue = StandingQueue(clock=clock)
    for _ in range(int(INTERVAL_SECONDS / 0.001) - 2):
        assert not _take(queue, clock, TARGET_SECONDS * 4)
    assert not queue.standing


def test_a_queue_over_the_target_for_an_interval_stands_and_refuses_new_arrivals_over_the_target() -> None:
    clock = Clock()
    queue = StandingQueue(clock=clock)
    while not queue.standing:
        assert not _take(queue, clock, TARGET_SECONDS * 4)  # the interval's reviews are served
    assert clock.now - 100.0 >= INTERVAL_SECONDS
    clock.now += TARGET_SECONDS * 4
    assert _take(queue, clock, TARGET_SECONDS * 4)  # arrived after the queue began to stand
    assert not _take(queue, clock, TARGET_SECONDS / 2)  # within the target: served, and it still stands
    assert queue.standing
    assert _take(queue, clock, TARGET_SECONDS * 2)


def test_one_review_within_the_target_restarts_the_interval() -> None:
    clock = Clock()
    queue = StandingQueue(clock=clock)
    for _ in range(3):
        for _ in range(int(INTERVAL_SECONDS / 0.001) - 5):
            assert not _take(queue, clock, TARGET_SECONDS * 4)
        assert not _take(queue, clock, TARGET_SECONDS / 2)
    assert not queue.standing


def test_a_burst_that_arrived_before_the_queue_stood_is_served_however_long_it_drains() -> None:
    """200 reviews arrive at once and drain one every 2 ms (400 ms): none is refused."""
    clock = Clock()
    queue = StandingQueue(clock=clock)
    arrived = clock.now
    for _ in range(200):
        clock.now += 0.002
        assert not queue.refuse(clock.now - arrived, arrived)
    assert queue.standing  # it stood, but nothing arrived while it did
    assert queue.refuse(LATE_SECONDS + 0.1, arrived)  # an answer after kube-apiserver gave up is no use


def test_an_idle_moment_ends_the_standing_queue_and_nothing_survives_idle_time() -> None:
    """The state that once refused a lone review on an idle server: time since the queue last drained
    kept counting while the server had nothing to do. Here idle time resets it all."""
    clock = Clock()
    queue = StandingQueue(clock=clock)
    while not queue.standing:
        _take(queue, clock, TARGET_SECONDS * 4)
    assert _take(queue, clock, TARGET_SECONDS * 4, step=TARGET_SECONDS * 5)
    queue.idle()
    assert not queue.standing
    clock.now += INTERVAL_SECONDS * 30  # idle for 3 s
    queue.idle()
    for _ in range(5):  # a lone review after idle time, however long it waited behind other work
        assert not _take(queue, clock, TARGET_SECONDS * 20, step=1.0)
        queue.idle()


def test_an_overload_that_goes_on_through_an_idle_moment_is_refused_again_at_once() -> None:
    """Refusals are cheap: under a sustained overload the worker empties its queue and waits a moment
    for its clients. A review over the target within REENTER_SECONDS of that finds the queue standing
    again, as from the moment it stopped: what arrived since and waited is refused, not served late
    while a new interval is measured."""
    clock = Clock()
    queue = StandingQueue(clock=clock)
    while not queue.standing:
        _take(queue, clock, TARGET_SECONDS * 4)
    clock.now += TARGET_SECONDS * 4
    queue.idle()
    stopped = clock.now
    clock.now += 0.02  # the clients' next requests
    assert not _take(queue, clock, TARGET_SECONDS / 2)  # within the target: served, nothing stands
    assert not queue.standing
    assert _take(queue, clock, TARGET_SECONDS * 2)  # arrived after the queue stopped standing
    assert queue.standing
    assert not queue.refuse(TARGET_SECONDS * 2, stopped - 0.001)  # arrived while it still stood: a burst's
    clock.now = stopped + REENTER_SECONDS - 0.01
    assert _take(queue, clock, TARGET_SECONDS * 4)


def test_a_queue_that_stands_again_after_an_idle_pause_is_met_after_a_whole_interval() -> None:
    clock = Clock()
    queue = StandingQueue(clock=clock)
    while not queue.standing:
        _take(queue, clock, TARGET_SECONDS * 4)
    queue.idle()
    clock.now += REENTER_SECONDS
    queue.idle()
    for _ in range(int(INTERVAL_SECONDS / 0.001) - 2):
        assert not _take(queue, clock, TARGET_SECONDS * 4)
    while not queue.standing:
        _take(queue, clock, TARGET_SECONDS * 4)
    assert _take(queue, clock, TARGET_SECONDS * 4, step=TARGET_SECONDS * 5)


def _request(body: bytes, extra: str = "") -> bytes:
    head = f"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n{extra}"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _responses(conn: ssl.SSLSocket, count: int) -> list[tuple[int, dict[str, str], bytes]]:
    """`count` HTTP/1.1 responses read off a connection (Content-Length framed)."""
    buffer, out = b"", list[tuple[int, dict[str, str], bytes]]()
    while len(out) < count:
        while b"\r\n\r\n" not in buffer:
            chunk = conn.recv(65536)
            assert chunk, f"connection closed after {len(out)} of {count} responses"
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = int(headers["content-length"])
        while len(buffer) < length:
            chunk = conn.recv(65536)
            assert chunk, "connection closed inside a body"
            buffer += chunk
        out.append((int(status_line.split()[1]), headers, buffer[:length]))
        buffer = buffer[length:]
    return out


def _heavy_review() -> bytes:
    """A review with many containers, so that this test's Python clients outrun the worker."""
    pod = gpu_pod()
    pod["spec"]["containers"] = [{**pod["spec"]["containers"][0], "name": f"c{i}"} for i in range(30)]
    return json.dumps(make_review(pod)).encode()


def test_a_worker_under_sustained_overload_refuses_quickly_and_recovers(
    start_server: StartServer, kubeconfig: Path, tls_dir: Path
) -> None:
    """40 connections keep 5 reviews each in flight for 3 s: far more than one worker serves. Every
    request is answered, in order (refusals made from a request's bytes and those made after
    gunicorn parsed it interleave on each connection); the first round arrived at once (a burst)
    and is served, and what arrives once the queue stands is refused from the next round on, with
    the overload Status. The worker serves normally right after."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    review = _heavy_review()
    assert server.review(json.loads(review))["allowed"] is True  # the template exists, the caches are warm
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    clients, depth = 40, 5
    answers: list[tuple[int, dict[str, str], bytes]] = []
    lock = threading.Lock()
    connected = threading.Barrier(clients)

    def client() -> None:
        with _open(server.port, context) as conn:
            connected.wait()
            until = time.monotonic() + 3.0
            while time.monotonic() < until:
                # Plain requests, refused from their bytes, and one that gunicorn parses first.
                conn.sendall(_request(review) * (depth - 1) + _request(review, "Connection: keep-alive\r\n"))
                got = _responses(conn, depth)
                with lock:
                    answers.extend(got)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    statuses = [status for status, _, _ in answers]
    assert statuses and set(statuses) <= {200, 429}
    refused = [(headers, body) for status, headers, body in answers if status == 429]
    assert refused and statuses.count(200) > 0, statuses.count(200)
    assert statuses.index(429) < 2 * clients * depth, statuses.index(429)  # refused from the second round on
    headers, body = refused[0]
    assert "retry-after" not in headers  # kube-apiserver applies failurePolicy at once (e2e/test_refusal_status.py)
    status: dict[str, Any] = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 429 and "overloaded" in status["message"]
    assert server.review(json.loads(review))["allowed"] is True  # served again once the load is gone
    metrics = server.session.get(f"{server.url}/metrics", timeout=10).text
    assert f'outcome="shed_overloaded"}} {float(len(refused))}' in metrics
    # Each refusal is timed from its arrival: the histogram counts them all, within the 5 s kube-apiserver waits.
    assert f"dra_migrate_webhook_refusal_duration_seconds_count {float(len(refused))}" in metrics
    assert f'dra_migrate_webhook_refusal_duration_seconds_bucket{{le="5.0"}} {float(len(refused))}' in metrics


def _open(port: int, context: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn = context.wrap_socket(raw, server_hostname="127.0.0.1")
    conn.settimeout(30)
    return conn


def test_an_idle_server_never_refuses_a_review(start_server: StartServer, kubeconfig: Path, tls_dir: Path) -> None:
    """After seconds of idle time, a lone review that waits behind other work in its worker (metrics
    scrapes that arrive with it) is served. The shedding state of old kept counting idle time as
    time the queue had not drained, and refused it."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    review = _heavy_review()
    assert server.review(json.loads(review))["allowed"] is True
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    scrape = b"GET /metrics HTTP/1.1\r\nHost: webhook\r\n\r\n"
    statuses = []
    for _ in range(6):
        conn, *scrapers = [_open(server.port, context) for _ in range(6)]
        time.sleep(2.5)
        conn.sendall(_request(review))
        for scraper in scrapers:
            scraper.sendall(scrape)
        statuses.append(_responses(conn, 1)[0][0])
        for socket_ in (conn, *scrapers):
            socket_.close()
    assert statuses == [200] * 6, statuses


def test_a_burst_of_200_concurrent_reviews_is_absorbed(
    start_server: StartServer, kubeconfig: Path, tls_dir: Path
) -> None:
    """200 pods created at once (a ReplicaSet scaled up): 200 connections, each with one review sent
    at the same moment. The queue stands for longer than an interval while it drains, but all of it
    arrived before: every review is served."""
    server = start_server(kubeconfig=kubeconfig)
    review = _heavy_review()
    assert server.review(json.loads(review))["allowed"] is True
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    connections = [_open(server.port, context) for _ in range(200)]
    go = threading.Barrier(len(connections))
    statuses: list[int] = []
    lock = threading.Lock()

    def send(conn: ssl.SSLSocket) -> None:
        go.wait()
        conn.sendall(_request(review))
        status = _responses(conn, 1)[0][0]
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=send, args=(conn,)) for conn in connections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for conn in connections:
        conn.close()
    assert statuses == [200] * len(connections), {status: statuses.count(status) for status in set(statuses)}
