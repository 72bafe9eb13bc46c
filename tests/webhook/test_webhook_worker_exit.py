"""What must survive its own workers and a misbehaving API.

A worker that leaves (a SIGHUP reload here; gunicorn's abort after a worker timeout leaves the same
way, through SystemExit) must not take shared state with it: the metrics directory of every worker,
and the CA file the Kubernetes client wrote from the kubeconfig's `certificate-authority-data`. An
API that answers every watch with 410, or asks to wait (429 with retryAfterSeconds), is not hammered.
Real gunicorn, real HTTP(S) API endpoints, a real reload."""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import time
from pathlib import Path

from admission import make_review
from fakekube import FakeKubeServer, write_kubeconfig
from pods import gpu_pod
from polling import wait_until
from webhook_support import StartServer

from dra_migrate.webhook.server import GRACEFUL_TIMEOUT_SECONDS

# A stopping server exits within gunicorn's graceful timeout, after which it ends its workers itself; the
# margin is for a machine busy with other tests.
EXIT_SECONDS = GRACEFUL_TIMEOUT_SECONDS + 5


def _files(directory: Path) -> set[Path]:
    return {p for p in directory.rglob("*") if p.is_file()}


def test_a_reload_keeps_the_api_ca_file_and_the_metrics(
    start_server: StartServer, tls_dir: Path, tmp_path: Path
) -> None:
    private_tmp = tmp_path / "tmp"  # the server's TMPDIR: where the client writes the CA it was given
    private_tmp.mkdir()
    with FakeKubeServer(tls=(tls_dir / "tls.crt", tls_dir / "tls.key")) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, ca=(tls_dir / "ca.crt").read_bytes())
        server = start_server(kubeconfig=kubeconfig, workers=2, env={"TMPDIR": str(private_tmp)})
        ca_files = [p for p in _files(private_tmp) if p.read_bytes() == (tls_dir / "ca.crt").read_bytes()]
        assert len(ca_files) == 1, sorted(_files(private_tmp))
        before = server.review(make_review(gpu_pod("before")))
        assert before["allowed"] and before.get("patch"), before

        server.process.send_signal(signal.SIGHUP)  # new workers; the old ones exit
        wait_until(lambda: server.log().count("Worker exiting") >= 2, timeout=30, what="the old workers to exit")
        wait_until(lambda: server.session.get(f"{server.url}/readyz", timeout=2).status_code == 200)

        assert ca_files[0].exists(), "an exiting worker deleted the CA file the API client uses"
        assert os.environ.get("PROMETHEUS_MULTIPROC_DIR") is None  # the server's, not this process's
        for number in range(4):  # both new workers, on fresh connections to the API
            server.session.close()
            after = server.review(make_review(gpu_pod(f"after-{number}")))
            assert after["allowed"] and after.get("patch"), (after, server.log()[-3000:])
        metrics = server.session.get(f"{server.url}/metrics", timeout=5)
        assert metrics.status_code == 200, metrics.text
        assert "dra_migrate" in metrics.text


def _watch_calls(api: FakeKubeServer) -> int:
    return sum(1 for method, path in list(api.fake.calls) if method == "GET" and "watch=true" in path)


def _list_calls(api: FakeKubeServer) -> int:
    return sum(1 for method, path in list(api.fake.calls) if method == "GET" and "limit=" in path)


def test_a_watch_that_always_ends_with_410_is_retried_with_backoff(start_server: StartServer, tmp_path: Path) -> None:
    """A proxy or store that answers every watch with 410 Expired: relisting at once each time was
    a thousand calls in seconds; after the second in a row the watches back off."""
    with FakeKubeServer() as api:
        api.fake.watch_gone = True  # from the first watch: the copies may be watching before the server is ready
        start_server(kubeconfig=api.write_kubeconfig(tmp_path / "kc"), workers=1)
        before = _watch_calls(api)
        time.sleep(4)
        watches = _watch_calls(api) - before
        # 4 watched resources; each backs off 0.5, 1, 2 s ... after its second 410 in a row
        assert 0 < watches <= 4 * 6, watches


def test_a_429_with_retry_after_is_honoured(start_server: StartServer, tmp_path: Path) -> None:
    with FakeKubeServer() as api:
        start_server(kubeconfig=api.write_kubeconfig(tmp_path / "kc"), workers=1)
        # every resource lists once at start; on a loaded machine that can take longer than readiness
        wait_until(lambda: _list_calls(api) >= 4, timeout=30, what="the 4 watched resources to list")
        api.fake.fail_retry_after = 8
        api.fake.fail_status = 429
        api.fake.watch_gone = True  # the watches end: each resource lists again, and is told to wait 8 s
        time.sleep(1)
        before = _list_calls(api)
        time.sleep(5)
        # 4 watched resources: at most one attempt each in 5 s; without the server's word (0.5, 1, 2, 4 s
        # pauses) about three each
        assert _list_calls(api) - before <= 4, _list_calls(api) - before


def test_sigterm_does_not_wait_for_kept_alive_connections(start_server: StartServer, tmp_path: Path) -> None:
    """A kept-alive connection waiting for its next review (kube-apiserver keeps several, and so does
    this test's session) held its worker on SIGTERM until gunicorn's 20 s graceful timeout, after
    which the worker was killed: every rollout took 20 s per pod."""
    with FakeKubeServer() as api:
        server = start_server(kubeconfig=api.write_kubeconfig(tmp_path / "kc"), workers=2)
        for number in range(4):  # connections to both workers, left open
            assert server.review(make_review(gpu_pod(f"p{number}")))["allowed"]
        code = server.stop()  # within ServerProcess's 15 s, else killed
        log = server.log_path.read_text(errors="replace")
        assert code == 0, log[-2000:]
        assert "graceful timeout" not in log.lower()


def test_sigterm_serves_the_first_request_of_a_connection_just_opened(
    start_server: StartServer, tmp_path: Path, tls_dir: Path
) -> None:
    """A connection accepted just before SIGTERM carries a request nobody retries (a POST on a new
    connection): it was shut down with the idle ones, and the pod's create failed."""
    with FakeKubeServer() as api:
        server = start_server(kubeconfig=api.write_kubeconfig(tmp_path / "kc"), workers=1)
        context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
        connection.connect()  # handshake done, no request yet
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the worker has stopped accepting and shut its idle connections
        connection.request("POST", "/mutate", json.dumps(make_review(gpu_pod())), {"Content-Type": "application/json"})
        answer = connection.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["response"]["allowed"] is True
        connection.close()
        assert server.process.wait(timeout=EXIT_SECONDS) == 0


def test_sigterm_answers_reviews_on_connections_that_keep_coming(
    start_server: StartServer, tmp_path: Path, tls_dir: Path
) -> None:
    """After SIGTERM, kube-apiserver may still open connections for a moment (its endpoints are not
    updated everywhere at once). The workers closed their listening socket within a second: the
    connections in its backlog were reset and later ones refused, and their pods' creates failed.
    Each is now accepted and answered, and the server still exits once they stop coming."""
    with FakeKubeServer() as api:
        server = start_server(kubeconfig=api.write_kubeconfig(tmp_path / "kc"), workers=2)
        context = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
        assert server.review(make_review(gpu_pod("warm")))["allowed"]
        server.process.send_signal(signal.SIGTERM)
        statuses: list[int | str] = []
        until = time.monotonic() + 2.0
        while time.monotonic() < until:
            connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
            try:
                body = json.dumps(make_review(gpu_pod()))
                connection.request("POST", "/mutate", body, {"Content-Type": "application/json"})
                answer = connection.getresponse()
                allowed = json.loads(answer.read())["response"]["allowed"]
                statuses.append(answer.status if allowed else "denied")
                assert answer.getheader("Connection") == "close"
            except OSError as exc:
                statuses.append(type(exc).__name__)
            finally:
                connection.close()
            time.sleep(0.05)
        assert statuses and set(statuses) == {200}, statuses
        assert server.process.wait(timeout=EXIT_SECONDS) == 0
