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
    BURST_SECONDS,
    LATE_SECONDS,
    TARGET_SECONDS,
    TARGET_WINDOW_SECONDS,
    WARY_SECONDS,
    QueueDelayShedder,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_served_while_the_queue_drains() -> None:
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    for _ in range(20):  # waits far above the target, but the queue drained within the burst window
        clock.now += BURST_SECONDS / 40
        assert not shedder.refuse(BURST_SECONDS / 2)
    assert shedder.refuse(LATE_SECONDS + 0.1)  # its answer would come after kube-apiserver gave up


def test_a_standing_queue_refuses_what_waited_past_the_target() -> None:
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    clock.now += BURST_SECONDS * 1.1  # no review waited less than the target for a whole interval
    assert shedder.refuse(TARGET_SECONDS * 2)
    assert not shedder.refuse(TARGET_SECONDS / 2)  # the queue drained: served, and the rule relaxes
    assert not shedder.refuse(TARGET_SECONDS * 2)


def test_after_refusing_the_worker_stays_wary() -> None:
    """Refusals empty the queue for a moment; when it stands again soon after, that is the same
    overload, not a burst: it is met within a short window, not after another BURST_SECONDS."""
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    clock.now += BURST_SECONDS * 1.1
    assert shedder.refuse(TARGET_SECONDS * 2)
    shedder.drained()
    clock.now += TARGET_WINDOW_SECONDS * 2
    assert shedder.refuse(TARGET_SECONDS * 2)
    clock.now += WARY_SECONDS * 2  # long after: a burst again
    shedder.drained()
    clock.now += TARGET_WINDOW_SECONDS * 2
    assert not shedder.refuse(TARGET_SECONDS * 2)


def test_an_emptied_queue_ends_the_standing_state() -> None:
    """After the load, the first review may wait behind other work (connections closing): the queue
    emptied just before, so it is served."""
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    clock.now += BURST_SECONDS * 2
    assert shedder.refuse(TARGET_SECONDS * 2)
    shedder.drained()
    clock.now += TARGET_WINDOW_SECONDS / 2
    assert not shedder.refuse(TARGET_SECONDS * 2)


def _request(body: bytes) -> bytes:
    head = "POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
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


def test_a_worker_under_sustained_overload_refuses_quickly_and_recovers(
    start_server: StartServer, kubeconfig: Path, tls_dir: Path
) -> None:
    """80 connections keep 10 reviews each in flight for longer than a burst lasts: far more than one
    worker serves. Every request is answered, the refusals with the overload Status, and the worker
    serves normally right after."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    pod = gpu_pod()
    # a heavy review (many containers), so that this test's Python clients outrun the worker
    pod["spec"]["containers"] = [{**pod["spec"]["containers"][0], "name": f"c{i}"} for i in range(30)]
    review = json.dumps(make_review(pod)).encode()
    assert server.review(json.loads(review))["allowed"] is True  # the template exists, the caches are warm
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    answers: list[tuple[int, dict[str, str], bytes]] = []
    lock = threading.Lock()
    until = time.monotonic() + BURST_SECONDS * 4

    def client() -> None:
        raw = socket.create_connection(("127.0.0.1", server.port))
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.settimeout(60)
            while time.monotonic() < until:
                conn.sendall(_request(review) * 10)
                got = _responses(conn, 10)
                with lock:
                    answers.extend(got)

    threads = [threading.Thread(target=client) for _ in range(80)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    statuses = [status for status, _, _ in answers]
    assert statuses and set(statuses) <= {200, 429}
    refused = [(headers, body) for status, headers, body in answers if status == 429]
    assert refused and statuses.count(200) > 0, statuses.count(200)
    headers, body = refused[0]
    assert "retry-after" not in headers  # kube-apiserver applies failurePolicy at once (e2e/test_refusal_status.py)
    status: dict[str, Any] = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 429 and "overloaded" in status["message"]
    assert server.review(json.loads(review))["allowed"] is True  # served again once the load is gone
    metrics = server.session.get(f"{server.url}/metrics", timeout=10).text
    assert f'outcome="shed_overloaded"}} {float(len(refused))}' in metrics
