"""The real server with certificates outside their validity window, and its certificate and label metrics."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import re
import signal
import ssl
import time
from pathlib import Path

from admission import make_review
from cert_chain import intermediate
from cryptography import x509
from polling import wait_until, wait_while_running
from secret_volume import SecretVolume
from webhook_support import ServerProcess, StartServer, worker_pids

from dra_migrate.certs.generate import CertifiedKey, create_ca, issue_serving_cert

DAY = dt.timedelta(days=1)
RELOAD_FAILURES = "dra_migrate_webhook_certificate_reload_failures_total"
EXPIRATION = "dra_migrate_webhook_certificate_expiration_timestamp_seconds"


def serving(ca: CertifiedKey, start: dt.datetime | None = None, days: int = 365) -> CertifiedKey:
    return issue_serving_cert(
        ca, service="dra-migrate", namespace="dra-migrate", ip_addresses=["127.0.0.1"], now=start, validity=days * DAY
    )


def publish(volume: SecretVolume, ca: CertifiedKey, leaf: CertifiedKey) -> None:
    volume.publish({"tls.crt": leaf.cert_pem(), "tls.key": leaf.key_pem(), "ca.crt": ca.cert_pem()})


def metric(text: str, name: str) -> float | None:
    found = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def served_serial(port: int) -> int:
    """Serial of the certificate a fresh handshake gets (not verified: it may be expired)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
    connection.connect()
    assert connection.sock is not None
    der = connection.sock.getpeercert(binary_form=True)
    connection.close()
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def unverified_get(port: int, path: str) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
    connection.request("GET", path)
    answer = connection.getresponse()
    body = answer.read().decode()
    connection.close()
    return answer.status, body


def test_expired_rotation_keeps_the_valid_certificate_and_is_counted(
    start_server: StartServer, kubeconfig: Path, tmp_path: Path
) -> None:
    ca = create_ca(now=dt.datetime.now(dt.UTC) - 1000 * DAY)
    good = serving(ca)
    volume = SecretVolume(tmp_path / "tls")
    publish(volume, ca, good)
    server: ServerProcess = start_server(tls_dir=volume.root, kubeconfig=kubeconfig)
    assert server.log().count("serving TLS certificate") == 1  # the master's, which the workers inherit
    expiration = metric(server.session.get(f"{server.url}/metrics").text, EXPIRATION)
    assert expiration == good.cert.not_valid_after_utc.timestamp()

    stale = serving(ca, dt.datetime.now(dt.UTC) - 400 * DAY)  # well formed, expired 35 days ago
    publish(volume, ca, stale)

    def failures() -> float:
        # Each handshake lets a worker look at the files again.
        assert served_serial(server.port) == good.cert.serial_number
        return metric(server.session.get(f"{server.url}/metrics").text, RELOAD_FAILURES) or 0.0

    wait_until(lambda: failures() >= 1, timeout=20, what="the server to refuse the expired certificate")
    time.sleep(1.5)  # past the check interval: still refused, and counted once for the server
    assert failures() == 1
    assert server.session.get(f"{server.url}/readyz").status_code == 200
    assert server.log().count("expired at") == 1

    # A worker forked after the refusal serves the pair its sibling serves, not the files.
    workers = worker_pids(server)
    os.kill(workers[0], signal.SIGKILL)
    wait_until(lambda: len(set(worker_pids(server)) - set(workers)) == 1, timeout=20, what="a new worker")
    time.sleep(1.5)  # the new worker has checked the files on its own as well
    assert {served_serial(server.port) for _ in range(40)} == {good.cert.serial_number}
    assert server.session.get(f"{server.url}/readyz").status_code == 200
    assert failures() == 1

    # So do the workers of a reload (SIGHUP: gunicorn reads its settings again and replaces them all).
    workers = worker_pids(server)
    server.process.send_signal(signal.SIGHUP)
    wait_until(lambda: not set(worker_pids(server)) & set(workers), timeout=30, what="the workers replaced")
    assert {served_serial(server.port) for _ in range(40)} == {good.cert.serial_number}
    assert server.session.get(f"{server.url}/readyz").status_code == 200


def test_an_expired_certificate_in_the_chain_is_not_ready(kubeconfig: Path, tmp_path: Path) -> None:
    """A valid leaf sent with its issuer's expired certificate: clients refuse the chain, so not ready."""
    now = dt.datetime.now(dt.UTC)
    root = create_ca(now=now - DAY)
    issuing = intermediate(root, "old intermediate", not_before=now - DAY, not_after=now + 400 * DAY)
    leaf = serving(issuing)
    expired = intermediate(root, "old intermediate", not_before=now - 400 * DAY, not_after=now - DAY, key=issuing.key)
    volume = SecretVolume(tmp_path / "tls")
    volume.publish(
        {"tls.crt": leaf.cert_pem() + expired.cert_pem(), "tls.key": leaf.key_pem(), "ca.crt": root.cert_pem()}
    )
    server = ServerProcess(tls_dir=volume.root, work_dir=tmp_path, kubeconfig=kubeconfig)
    try:
        problems = not_ready_because(server)
        assert any("the chain certificate CN=old intermediate expired at" in problem for problem in problems), problems
    finally:
        server.stop()


def not_ready_because(server: ServerProcess) -> list[str]:
    """The problems of a server whose /readyz answers 503."""
    status, body = wait_for_answer(server, "/readyz")
    assert status == 503, body
    problems: list[str] = json.loads(body)["problems"]
    return problems


def wait_for_answer(server: ServerProcess, path: str) -> tuple[int, str]:
    """The first answer of a server that may serve a certificate clients would refuse."""

    def answer() -> tuple[int, str] | None:
        try:
            return unverified_get(server.port, path)
        except OSError:
            return None  # not listening yet

    return wait_while_running(answer, server.process.poll, what=f"an answer to GET {path}", log=server.log, timeout=30)


def test_serving_an_expired_certificate_is_not_ready(kubeconfig: Path, tmp_path: Path) -> None:
    ca = create_ca(now=dt.datetime.now(dt.UTC) - 1000 * DAY)
    volume = SecretVolume(tmp_path / "tls")
    publish(volume, ca, serving(ca, dt.datetime.now(dt.UTC) - 400 * DAY))
    server = ServerProcess(tls_dir=volume.root, work_dir=tmp_path, kubeconfig=kubeconfig)
    try:
        problems = not_ready_because(server)
        assert any("expired at" in problem for problem in problems), problems
        assert unverified_get(server.port, "/healthz")[0] == 200  # alive, just not ready
    finally:
        server.stop()


def test_not_yet_valid_certificate_is_not_ready(kubeconfig: Path, tmp_path: Path) -> None:
    ca = create_ca(now=dt.datetime.now(dt.UTC) - DAY)
    volume = SecretVolume(tmp_path / "tls")
    publish(volume, ca, serving(ca, dt.datetime.now(dt.UTC) + 2 * DAY))
    server = ServerProcess(tls_dir=volume.root, work_dir=tmp_path, kubeconfig=kubeconfig)
    try:
        status, body = wait_for_answer(server, "/readyz")
        assert status == 503 and "not valid before" in body
    finally:
        server.stop()


PATTERN_CONFIG = {
    "mappings": [{"pattern": r"accel\.test/(?P<m>[a-z0-9]+)", "deviceClassName": "accel.test"}],
}


def test_conversion_labels_stay_bounded(start_server: StartServer, kubeconfig: Path) -> None:
    """Resource names chosen by pods never become label values: 50 names, one `other` series."""
    server: ServerProcess = start_server(kubeconfig=kubeconfig, config=PATTERN_CONFIG)
    for index in range(50):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{index}"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {f"accel.test/m{index}": 1}}}]},
        }
        assert server.review(make_review(pod))["allowed"]
    gpu = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpu"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    assert server.review(make_review(gpu))["patchType"] == "JSONPatch"
    text = server.session.get(f"{server.url}/metrics").text
    labels = set(re.findall(r'^dra_migrate_webhook_conversions_total\{[^}]*resource="([^"]+)"', text, re.MULTILINE))
    assert labels == {"other", "nvidia.com/gpu"}, labels
    assert metric(text, 'dra_migrate_webhook_conversions_total{mode="enforce",resource="other"}') == 50.0
