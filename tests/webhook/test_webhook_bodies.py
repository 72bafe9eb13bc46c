"""Request bodies: reviews up to the largest a stored pod makes are read, and a worker holds a
bounded number of body bytes, whatever slow or large uploads do (webhook/bodies.py). The budget's
rule, and the real server (gunicorn, gevent, TLS)."""

from __future__ import annotations

import json
import socket
import ssl
import time
from pathlib import Path
from typing import Any

from admission import make_review
from pods import gpu_pod
from webhook_support import StartServer, patched

from dra_migrate.webhook.bodies import BODY_BUDGET_BYTES, MAX_REVIEW_BYTES, BodyBudget, declared_size


def test_the_budget_holds_what_fits_and_takes_back_what_is_given() -> None:
    budget = BodyBudget(100)
    assert budget.take(60) and budget.take(40)
    assert not budget.take(1)
    budget.give_back(40)
    assert not budget.take(41) and budget.take(40)
    assert budget.held == 100


def test_the_declared_size_is_the_bound_when_a_request_declares_none_it_can_use() -> None:
    assert declared_size([("CONTENT-LENGTH", "2675")]) == 2675
    assert declared_size([("CONTENT-LENGTH", str(MAX_REVIEW_BYTES * 3))]) == MAX_REVIEW_BYTES
    assert declared_size([("TRANSFER-ENCODING", "chunked")]) == MAX_REVIEW_BYTES
    assert declared_size([("CONTENT-LENGTH", "5"), ("CONTENT-LENGTH", "5")]) == MAX_REVIEW_BYTES
    assert MAX_REVIEW_BYTES < BODY_BUDGET_BYTES < 2 * MAX_REVIEW_BYTES  # one largest review at a time


def _large_review(size: int) -> dict[str, Any]:
    """A GPU pod's review of about `size` bytes, most of it managedFields (as kube-apiserver sends it)."""
    pod = gpu_pod()
    fields: dict[str, dict[str, Any]] = {f"f:note-{index}": {} for index in range(size // 20)}
    pod["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
        | {"fieldsV1": {"f:metadata": {"f:annotations": fields}}}
    ]
    return make_review(pod)


def test_a_review_larger_than_the_apiservers_request_limit_is_read(start_server: StartServer, kubeconfig: Path) -> None:
    """A pod whose review, with the managedFields the apiserver adds, passes 3 MiB (the limit on a
    client's request body, not on the review) was answered 413 and its create failed."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    review = _large_review(4 * 1024 * 1024)
    assert len(json.dumps(review)) > 4 * 1024 * 1024
    answer = server.post(review)
    assert answer.status_code == 200, answer.text[:300]
    response = answer.json()["response"]
    assert response["allowed"] is True
    assert patched(review["request"]["object"], response)["spec"]["resourceClaims"]


def _upload_head(size: int) -> bytes:
    return (
        b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {size}\r\n\r\n".encode()
    )


def _status(conn: ssl.SSLSocket) -> int:
    head = b""
    while b"\r\n" not in head:
        chunk = conn.recv(4096)
        assert chunk, "closed without an answer"
        head += chunk
    return int(head.split(b" ", 2)[1])


def test_uploads_past_the_budget_are_refused_and_a_cut_upload_gives_its_bytes_back(
    start_server: StartServer, kubeconfig: Path, tls_dir: Path
) -> None:
    """One worker. A client declares the largest review and sends it slowly: a second one of that
    size does not fit next to it and is refused at once (the overload answer), while an ordinary
    review still is served. Once the first upload is cut off, its bytes are free again."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))

    def connect() -> ssl.SSLSocket:
        conn = context.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1")
        conn.settimeout(10)
        return conn

    slow = connect()
    slow.sendall(_upload_head(MAX_REVIEW_BYTES) + b" " * 65536)
    time.sleep(0.3)
    with connect() as second:
        second.sendall(_upload_head(MAX_REVIEW_BYTES) + b" " * 65536)
        assert _status(second) == 429
    assert server.review(make_review(gpu_pod("ordinary")))["allowed"] is True
    slow.close()  # cut off half-way
    time.sleep(0.5)
    review = _large_review(MAX_REVIEW_BYTES - 1024 * 1024)
    answer = server.post(review)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["response"]["allowed"] is True
