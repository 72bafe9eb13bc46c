"""How kube-apiserver treats a webhook's HTTP error status: how often it calls again, and how soon the
pod's creator gets the failurePolicy's answer. This decides the status the webhook sheds load with.

A stub HTTPS webhook answers every review with one status (with or without Retry-After); it is
registered like deploy/'s, failurePolicy Fail, for pods with one label only. A dry-run pod create
must fail, and the stub counts the calls it got for it. Measured on 1.37.2: 429, 503 and 500
without Retry-After: one call, refused in 0.01-0.04 s; with `Retry-After: 1`: five calls, refused
after the full 5 s. So a webhook that sheds load answers an error status without Retry-After.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from pods import pause_pod
from polling import wait_for

from .cluster_fixtures import Kube
from .controlplane import ControlPlane
from .webhook_process import deploy_configuration, generate_tls, webhook_configuration

LABEL = "e2e.dra-migrate.io/refusal"


class _Stub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, status: int, retry_after: str | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status, self.retry_after = status, retry_after
        self.calls: list[float] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Stub

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.calls.append(time.monotonic())
        body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"overloaded"}'
        self.send_response(self.server.status)
        if self.server.retry_after is not None:
            self.send_header("Retry-After", self.server.retry_after)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[_Stub, str]]:
    status, retry_after = request.param
    tls = generate_tls(tmp_path / "tls")
    server = _Stub(status, retry_after)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tls.cert), str(tls.key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, tls.ca_bundle
    finally:
        server.shutdown()
        server.server_close()


CASES = [(429, None), (503, None), (429, "1")]


@pytest.mark.parametrize("stub", CASES, indirect=True, ids=[f"{s}-retry-after-{r}" for s, r in CASES])
def test_how_the_apiserver_treats_an_error_status(
    control_plane: ControlPlane, kube: Kube, stub: tuple[_Stub, str]
) -> None:
    server, ca_bundle = stub
    port = server.server_address[1]
    configuration = webhook_configuration(
        deploy_configuration(control_plane),
        url=f"https://127.0.0.1:{port}/mutate",
        ca_bundle=ca_bundle,
        name="dra-migrate-e2e-refusal",
    )
    for hook in configuration["webhooks"]:
        hook["objectSelector"] = {"matchLabels": {LABEL: "true"}}
        hook["namespaceSelector"] = {}
        hook.pop("matchConditions", None)
    created = kube.create(configuration)
    pod = pause_pod("refused")
    pod["metadata"]["labels"] = {LABEL: "true"}
    try:
        # the configuration reaches the admission chain shortly after it is created
        def refused() -> float | None:
            server.calls.clear()
            started = time.monotonic()
            try:
                kube.create(pod, "default", dry_run="All")
            except ApiException:
                return time.monotonic() - started if server.calls else None
            return None

        elapsed = wait_for(refused, what="the webhook to be called and the create refused", timeout=60)
        calls = len(server.calls)
        print(f"status {server.status}, Retry-After {server.retry_after}: {calls} call(s), refused in {elapsed:.2f} s")
        if server.retry_after is None:  # one call, and the failurePolicy applies at once
            assert calls == 1, f"kube-apiserver called the webhook {calls} times for one create"
            assert elapsed < 3, elapsed
        else:  # client-go honours Retry-After: calls again until the webhook's timeoutSeconds runs out
            assert calls > 1 and elapsed >= 4, (calls, elapsed)
    finally:
        kube.delete(created["apiVersion"], created["kind"], created["metadata"]["name"])
