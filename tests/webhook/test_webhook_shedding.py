"""Load shedding: a worker refuses a review at once (HTTP 429, no Retry-After) when its queue stands,
instead of serving every review late. The rule with a fake clock, and a real server (gunicorn, gevent,
TLS) under a burst of pipelined reviews far beyond what one worker serves: every request is answered,
the refusals with the overload Status, and the worker serves normally right after."""

from __future__ import annotations

import json
import socket
import ssl
from pathlib import Path
from typing import Any

from webhook_support import StartServer, gpu_pod, make_review

from dra_migrate.webhook.shedding import INTERVAL_SECONDS, TARGET_SECONDS, QueueDelayShedder


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_served_while_the_queue_drains() -> None:
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    for _ in range(20):  # waits above the target, but the queue drained within the interval
        clock.now += INTERVAL_SECONDS / 40
        assert not shedder.refuse(TARGET_SECONDS * 4)
    assert shedder.refuse(INTERVAL_SECONDS * 1.5)  # waited past the interval: late either way


def test_a_standing_queue_refuses_what_waited_past_the_target() -> None:
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    clock.now += INTERVAL_SECONDS * 1.1  # no review waited less than the target for a whole interval
    assert shedder.refuse(TARGET_SECONDS * 2)
    assert not shedder.refuse(TARGET_SECONDS / 2)  # the queue drained: served, and the rule relaxes
    assert not shedder.refuse(TARGET_SECONDS * 2)


def test_an_emptied_queue_ends_the_standing_state() -> None:
    """After a burst the first review may wait behind other work (connections closing): the queue
    emptied in between, so it is served."""
    clock = Clock()
    shedder = QueueDelayShedder(clock=clock)
    clock.now += INTERVAL_SECONDS * 2
    assert shedder.refuse(TARGET_SECONDS * 2)
    shedder.drained()
    clock.now += INTERVAL_SECONDS / 2
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


def test_a_worker_under_a_burst_refuses_quickly_and_recovers(
    start_server: StartServer, kubeconfig: Path, tls_dir: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1)
    review = json.dumps(make_review(gpu_pod())).encode()
    assert server.review(json.loads(review))["allowed"] is True  # the template exists, the caches are warm
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    # 2,000 reviews at once, a second or more of work for one worker; each connection's fit its socket buffer
    connections, pipelined = 200, 10
    sockets = [
        context.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1")
        for _ in range(connections)
    ]
    try:
        for conn in sockets:
            conn.sendall(_request(review) * pipelined)
        answers: list[tuple[int, dict[str, str], bytes]] = []
        for conn in sockets:
            conn.settimeout(60)
            answers += _responses(conn, pipelined)
    finally:
        for conn in sockets:
            conn.close()
    statuses = [status for status, _, _ in answers]
    assert len(statuses) == connections * pipelined and set(statuses) <= {200, 429}
    refused = [(headers, body) for status, headers, body in answers if status == 429]
    assert refused and statuses.count(200) > 0, statuses.count(200)
    headers, body = refused[0]
    assert "retry-after" not in headers  # kube-apiserver applies failurePolicy at once (e2e/test_refusal_status.py)
    status: dict[str, Any] = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 429 and "overloaded" in status["message"]
    assert server.review(json.loads(review))["allowed"] is True  # served again once the burst is over
    metrics = server.session.get(f"{server.url}/metrics", timeout=10).text
    assert f'outcome="shed_overloaded"}} {float(len(refused))}' in metrics
