"""Certificate rotation without a restart: files swapped under a running server, no failed request."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from pathlib import Path

from admission import make_review
from cryptography import x509
from pods import gpu_pod
from polling import wait_until
from secret_volume import SecretVolume
from webhook_support import StartServer

from dra_migrate.certs.generate import create_ca, issue_serving_cert

BODY = json.dumps(make_review(gpu_pod()))
HEADERS = {"Content-Type": "application/json"}


class ClientLoop:
    """Reviews in a loop until stopped, over one kept-alive connection or a new one each time."""

    def __init__(self, port: int, context: ssl.SSLContext, *, keep_alive: bool) -> None:
        self.port = port
        self.context = context
        self.keep_alive = keep_alive
        self.ok = 0
        self.failures: list[str] = []
        self.serials: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)

    def _run(self) -> None:
        connection = self._connect()
        while not self._stop.is_set():
            try:
                if not self.keep_alive:
                    connection.close()
                    connection = self._connect()
                connection.request("POST", "/mutate", BODY, HEADERS)
                answer = connection.getresponse()
                payload = json.loads(answer.read())
                assert answer.status == 200 and payload["response"]["allowed"] is True, payload
                assert connection.sock is not None
                der = connection.sock.getpeercert(binary_form=True)
                assert der is not None
                self.serials.add(x509.load_der_x509_certificate(der).serial_number)
                self.ok += 1
            except Exception as exc:
                self.failures.append(repr(exc))
                connection.close()
                connection = self._connect()
        connection.close()

    def __enter__(self) -> ClientLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def test_rotation_without_restart_or_failed_requests(
    start_server: StartServer, kubeconfig: Path, tmp_path: Path
) -> None:
    ca = create_ca()
    old = issue_serving_cert(ca, service="dra-migrate", namespace="dra-migrate", ip_addresses=["127.0.0.1"])
    new = issue_serving_cert(ca, service="dra-migrate", namespace="dra-migrate", ip_addresses=["127.0.0.1"])
    volume = SecretVolume(tmp_path / "tls")
    volume.publish({"tls.crt": old.cert_pem(), "tls.key": old.key_pem(), "ca.crt": ca.cert_pem()})
    server = start_server(tls_dir=volume.root, kubeconfig=kubeconfig)
    pid = server.process.pid
    context = ssl.create_default_context(cafile=str(volume.root / "ca.crt"))

    with (
        ClientLoop(server.port, context, keep_alive=True) as kept,
        ClientLoop(server.port, context, keep_alive=False) as fresh,
    ):
        wait_until(lambda: fresh.ok > 20 and kept.ok > 20, what="traffic before the rotation")
        assert fresh.serials == {old.cert.serial_number}
        volume.publish({"tls.crt": new.cert_pem(), "tls.key": new.key_pem(), "ca.crt": ca.cert_pem()})
        wait_until(lambda: new.cert.serial_number in fresh.serials, timeout=15, what="the new certificate")
        seen_after = fresh.ok
        wait_until(lambda: fresh.ok > seen_after + 20, what="traffic after the rotation")

    assert kept.failures == [] and fresh.failures == []
    assert server.process.pid == pid and server.process.poll() is None
    ready = server.session.get(f"{server.url}/readyz")
    assert ready.status_code == 200
    # The kept-alive connection still uses the certificate of its handshake: no forced reconnects.
    assert kept.serials == {old.cert.serial_number}
