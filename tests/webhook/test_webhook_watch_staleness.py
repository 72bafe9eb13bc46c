"""Watched copies are distrusted within 15 s of a silent API, on a real server.

A TCP proxy between `serve` and the in-memory API stops forwarding on the connections open at one
moment (nothing closed: a NAT or load balancer that forgot its flows). A GPU ResourceQuota created
after that never reaches the webhook's watch; within WATCH_SILENCE_SECONDS the webhook reads the
quotas from the API again and refuses the pod (quotaGap: deny). With the whole path silent, new
connections included, the pod is refused with the API's failure instead, and the staleness shows in
the metrics.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from admission import make_review
from fakekube import FakeKubeServer, write_kubeconfig
from pods import gpu_pod
from polling import wait_for, wait_until
from stalling_proxy import StallingProxy
from webhook_support import ServerProcess, StartServer, decoded_patch, watch_stale, watching

from dra_migrate.webhook.resource_api import WATCH_SILENCE_SECONDS

# Past the bound: the review that follows it (once a second), on a machine that may be busy.
SLACK_S = 5.0
QUOTA_MESSAGE = "ResourceQuota team-a/gpu-quota limits requests.nvidia.com/gpu"


@pytest.fixture
def proxy(fake_kube: FakeKubeServer) -> Iterator[StallingProxy]:
    address = urlsplit(fake_kube.url)
    stalling = StallingProxy(str(address.hostname), int(address.port or 80))
    yield stalling
    stalling.close()


def _review(server: ServerProcess) -> dict[str, Any]:
    return server.review(make_review(gpu_pod(), namespace="team-a", dry_run=True))


def _started(start_server: StartServer, fake_kube: FakeKubeServer, proxy: StallingProxy, tmp: Path) -> ServerProcess:
    kubeconfig = write_kubeconfig(tmp / "proxied", f"http://127.0.0.1:{proxy.port}")
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourcequotas", "namespaces", "resourceclaimtemplates")
    fake_kube.fake.add_namespace("team-a")
    wait_until(lambda: watch_stale(server, "resourcequotas") == 0.0, what="the quota copy reported current")
    assert decoded_patch(_review(server))
    return server


def test_a_quota_added_behind_a_silent_watch_is_seen_within_the_bound(
    start_server: StartServer, fake_kube: FakeKubeServer, proxy: StallingProxy, tmp_path: Path
) -> None:
    server = _started(start_server, fake_kube, proxy, tmp_path)
    assert proxy.stall() > 0
    stalled = time.monotonic()
    fake_kube.fake.add_quota("team-a", "gpu-quota", {"requests.nvidia.com/gpu": "1"})
    answers: list[dict[str, Any]] = []

    def refused() -> bool:
        answers.append(_review(server))
        return not answers[-1]["allowed"] and QUOTA_MESSAGE in answers[-1]["status"]["message"]

    wait_for(refused, timeout=WATCH_SILENCE_SECONDS + SLACK_S + 10, interval=1.0, what="the quota's refusal")
    seconds = time.monotonic() - stalled
    assert seconds <= WATCH_SILENCE_SECONDS + SLACK_S, f"the new quota was ignored for {seconds:.1f}s"
    assert any(decoded_patch(answer) for answer in answers) or seconds > 1  # trusted until the bound, not after


def test_a_silent_api_is_not_trusted_and_shows_in_the_metrics(
    start_server: StartServer, fake_kube: FakeKubeServer, proxy: StallingProxy, tmp_path: Path
) -> None:
    server = _started(start_server, fake_kube, proxy, tmp_path)
    proxy.stall(new_too=True)
    stalled = time.monotonic()
    wait_for(
        lambda: watch_stale(server, "resourcequotas") == 1.0,
        timeout=WATCH_SILENCE_SECONDS + SLACK_S + 10,
        interval=0.5,
        what="the quota copy reported stale",
    )
    assert time.monotonic() - stalled <= WATCH_SILENCE_SECONDS + SLACK_S
    answer = _review(server)  # the API cannot be read: refused (apiUnavailable: deny), saying why
    assert answer["allowed"] is False and answer["status"]["code"] == 503, answer
    assert "did not answer in time" in answer["status"]["message"], answer["status"]["message"]
