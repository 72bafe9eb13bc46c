"""HTTP behaviour of a real server: malformed input gets a clear 4xx, probes and metrics answer."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admission import make_review
from fakekube import FakeKubeServer
from pods import gpu_pod
from webhook_support import ServerProcess, decoded_patch

from dra_migrate.webhook.bodies import MAX_REVIEW_BYTES


@pytest.fixture(scope="module")
def server(tls_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("http")
    with FakeKubeServer() as fake:
        process = ServerProcess(tls_dir=tls_dir, work_dir=work, kubeconfig=fake.write_kubeconfig(work / "kc"))
        try:
            yield process.wait_ready()
        finally:
            process.stop()


def _good_review_works(server: ServerProcess) -> None:
    response = server.review(make_review(gpu_pod()))
    assert response["allowed"] is True and decoded_patch(response)


def _without(review: dict[str, Any], *path: str) -> dict[str, Any]:
    node = review
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return review


MALFORMED: list[tuple[str, Any, str]] = [
    ("not-json", b"{not json", "not valid JSON"),
    ("json-array", b"[1, 2]", "JSON object"),
    ("wrong-kind", {**make_review(gpu_pod()), "kind": "Pod"}, "kind must be AdmissionReview"),
    ("wrong-api-version", {**make_review(gpu_pod()), "apiVersion": "admission.k8s.io/v2"}, "apiVersion must be"),
    ("missing-request", _without(make_review(gpu_pod()), "request"), "request is missing"),
    ("missing-uid", _without(make_review(gpu_pod()), "request", "uid"), "request.uid"),
    ("empty-uid", {**make_review(gpu_pod())} | {"request": {**make_review(gpu_pod())["request"], "uid": ""}}, "uid"),
    ("missing-object", _without(make_review(gpu_pod()), "request", "object"), "request.object"),
    (
        "object-not-a-map",
        make_review(gpu_pod()) | {"request": {**make_review(gpu_pod())["request"], "object": 3}},
        "object",
    ),
    ("missing-kind", _without(make_review(gpu_pod()), "request", "kind"), "request.kind"),
    ("missing-namespace", _without(make_review(gpu_pod()), "request", "namespace"), "request.namespace"),
    (
        "dry-run-not-bool",
        make_review(gpu_pod()) | {"request": {**make_review(gpu_pod())["request"], "dryRun": "yes"}},
        "dryRun",
    ),
    ("not-utf8", b'{"a": "\xff"}', "not valid JSON"),
]


@pytest.mark.parametrize(("name", "body", "text"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_review_is_400(server: ServerProcess, name: str, body: Any, text: str) -> None:
    answer = server.post(body)
    assert answer.status_code == 400, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    status = answer.json()
    assert status["kind"] == "Status" and status["code"] == 400
    assert text in status["message"]
    _good_review_works(server)


def test_wrong_content_type_is_415(server: ServerProcess) -> None:
    review = json.dumps(make_review(gpu_pod()))
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/yaml"):
        answer = server.post(review, headers={"Content-Type": content_type})
        assert answer.status_code == 415
        assert "Content-Type must be application/json" in answer.json()["message"]
    answer = server.post(review, headers={"Content-Type": "application/json; charset=utf-8"})
    assert answer.status_code == 200
    _good_review_works(server)


def test_oversized_body_is_413(server: ServerProcess) -> None:
    pod = gpu_pod()
    pod["metadata"]["annotations"] = {"big": "x" * (MAX_REVIEW_BYTES + 10)}
    answer = server.post(make_review(pod))
    assert answer.status_code == 413
    assert "exceeds" in answer.json()["message"]
    _good_review_works(server)


def test_oversized_chunked_body_is_413(server: ServerProcess) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_REVIEW_BYTES // (1024 * 1024) + 1):
            yield b" " * (1024 * 1024)

    answer = server.session.post(
        f"{server.url}/mutate", data=chunks(), headers={"Content-Type": "application/json"}, timeout=10
    )
    assert answer.status_code == 413
    _good_review_works(server)


def test_wrong_method_and_path(server: ServerProcess) -> None:
    assert server.session.get(f"{server.url}/mutate").status_code == 405
    missing = server.session.get(f"{server.url}/nope")
    assert missing.status_code == 404 and missing.json()["kind"] == "Status"
    # The benchmark-only route is off unless asked for.
    assert server.post(make_review(gpu_pod()), path="/mutate-noop").status_code == 404


def test_probes(server: ServerProcess) -> None:
    assert server.session.get(f"{server.url}/healthz").json() == {"status": "ok"}
    ready = server.session.get(f"{server.url}/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}


def test_metrics_after_reviews(server: ServerProcess) -> None:
    for _ in range(3):
        _good_review_works(server)
    server.post(b"nope")
    text = server.session.get(f"{server.url}/metrics").text
    for name in (
        "dra_migrate_webhook_reviews_total",
        "dra_migrate_webhook_conversions_total",
        "dra_migrate_webhook_review_duration_seconds_bucket",
        "dra_migrate_webhook_templates_created_total",
    ):
        assert name in text
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"}
    assert samples['dra_migrate_webhook_reviews_total{outcome="patched"}'] >= 3
    assert samples['dra_migrate_webhook_reviews_total{outcome="invalid"}'] >= 1
    assert samples['dra_migrate_webhook_conversions_total{mode="enforce",resource="nvidia.com/gpu"}'] >= 3
    assert samples["dra_migrate_webhook_templates_created_total"] == 1
    assert samples["dra_migrate_webhook_review_duration_seconds_count"] >= 4


def test_keep_alive_connection_is_reused(server: ServerProcess, tls_dir: Path) -> None:
    """kube-apiserver reuses connections: many reviews, one TLS connection."""
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    body = json.dumps(make_review(gpu_pod()))
    connection.request("POST", "/mutate", body, {"Content-Type": "application/json"})
    first = connection.getresponse()
    first.read()
    sock = connection.sock
    for _ in range(20):
        connection.request("POST", "/mutate", body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["response"]["allowed"] is True
        assert connection.sock is sock
    connection.close()


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2])
def test_no_session_tickets(server: ServerProcess, tls_dir: Path, version: ssl.TLSVersion) -> None:
    """kube-apiserver's client never resumes a session (client-go sets no ClientSessionCache): a ticket
    would be work on every new connection for nothing."""
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    context.minimum_version = context.maximum_version = version
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    connection.request("GET", "/readyz")  # TLS 1.3 tickets arrive after the handshake, before this answer
    connection.getresponse().read()
    assert isinstance(connection.sock, ssl.SSLSocket)
    session = connection.sock.session
    assert session is not None and not session.has_ticket
    connection.close()


def test_server_log_is_clean(server: ServerProcess) -> None:
    assert server.process.poll() is None
    assert "Traceback" not in server.log()


def test_containers_asking_for_zero_devices_do_not_count_against_the_limit(server: ServerProcess) -> None:
    """33 containers with `nvidia.com/gpu: 0` ask for nothing to convert: admitted unchanged, not 422."""
    pod = gpu_pod()
    pod["spec"]["containers"] = [
        {"name": f"c{i}", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 0}}} for i in range(33)
    ]
    response = server.review(make_review(pod))
    assert response["allowed"] is True and not decoded_patch(response)


def _raw_request(server: ServerProcess, head: bytes, body: bytes) -> bytes:
    context = ssl.create_default_context(cafile=str(server.session.verify))
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port), timeout=10), server_hostname="127.0.0.1"
    ) as connection:
        with contextlib.suppress(OSError):  # the server answered and closed before reading it all
            connection.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = connection.recv(65536)
            if not data:
                break
            answer += data
        return answer


def test_an_over_long_chunk_extension_is_a_4xx_without_a_traceback(server: ServerProcess) -> None:
    head = (
        b"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    body = b"2;" + b"x" * 70000 + b"\r\n{}\r\n0\r\n\r\n"
    answer = _raw_request(server, head, body)
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    assert 400 <= status < 500, answer[:200]
    assert "Traceback" not in server.log()
    _good_review_works(server)


def _heavy_review(names: int) -> dict[str, Any]:
    pod = gpu_pod()
    pod["spec"]["containers"][0]["resources"]["limits"].update({f"example.com/r{i}": 1 for i in range(names)})
    return make_review(pod)


def test_a_pod_with_too_many_resource_names_is_refused_before_they_are_looked_up(server: ServerProcess) -> None:
    answer = server.post(_heavy_review(55_000))
    assert answer.status_code == 200
    response = answer.json()["response"]
    assert response["allowed"] is False and response["status"]["code"] == 422
    assert "at most 1024 are reviewed" in response["status"]["message"]
    _good_review_works(server)


def test_heavy_reviews_pipelined_on_one_connection_do_not_stall_the_worker(server: ServerProcess) -> None:
    """40 heavy reviews back to back on one connection cost 36 s of CPU before the bound, and gunicorn
    killed the worker after 30 s; now each is refused at once and the worker lives on."""
    body = json.dumps(_heavy_review(20_000)).encode()
    request = (
        b"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    context = ssl.create_default_context(cafile=str(server.session.verify))
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port), timeout=60), server_hostname="127.0.0.1"
    ) as connection:
        for _ in range(40):
            connection.sendall(request)
        answers = b""
        while answers.count(b"HTTP/1.1 200") < 40:
            data = connection.recv(1 << 20)
            assert data, "the connection closed before every pipelined review was answered"
            answers += data
    assert answers.count(b'"code":422') == 40
    assert "WORKER TIMEOUT" not in server.log()
    _good_review_works(server)


def test_a_body_that_stalls_is_answered_408_and_its_connection_closed(server: ServerProcess) -> None:
    """A client that declares 3 MiB, sends 1 MiB and stalls held its buffer for as long as it liked."""
    context = ssl.create_default_context(cafile=str(server.session.verify))
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port), timeout=30), server_hostname="127.0.0.1"
    ) as connection:
        connection.sendall(
            b"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {3 * 1024 * 1024}\r\n\r\n".encode()
            + b" " * (1024 * 1024)
        )
        answer = b""
        while data := connection.recv(65536):  # until the server closes the connection (else a timeout)
            answer += data
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"not received within" in answer
    _good_review_works(server)
