"""The webhook's watched copies are not trusted behind a connection that silently stopped forwarding.

A TCP proxy between the webhook process and kube-apiserver stops forwarding on every connection
open at one moment (bytes read and dropped, nothing closed: what a NAT or load balancer that
forgot its flows does), while new connections work. A GPU ResourceQuota created after that is
never delivered by the webhook's watch; once the watch has been silent for WATCH_SILENCE_SECONDS
(longer than the apiserver lets a watch last) the webhook reads quotas from the API and refuses
the pod (quotaGap: deny) instead of converting it past the quota for the rest of the watch.

Beside it, a watch of a resource nobody writes, through the same client, as long as the webhook ever
asks for, is ended by the apiserver before that bound (kube-apiserver filters out the periodic
bookmarks of a quiet resource): a healthy watch is never taken for a dead one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from pods import gpu_pod
from polling import wait_for
from prometheus_client.parser import text_string_to_metric_families
from stalling_proxy import StallingProxy

from dra_migrate.webhook.kube_client import KubeResourceApi, load_configuration
from dra_migrate.webhook.resource_api import WATCH_JITTER, WATCH_SECONDS, WATCH_SILENCE_SECONDS, ApiError, ApiResource

from .cluster_fixtures import Kube
from .controlplane import ControlPlane
from .webhook_process import DEPLOY_SERVER_CONFIG, WebhookServer, generate_tls

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
# Past the bound: the review after it, whose direct read goes over a new connection.
DETECTION_SLACK_S = 5.0
POD_TEMPLATES = ApiResource("", "v1", "podtemplates", namespaced=True)  # nobody writes them: a quiet watch


def proxied_kubeconfig(plane: ControlPlane, port: int, path: Path) -> Path:
    """The admin kubeconfig, through 127.0.0.1:port (the apiserver's certificate names 127.0.0.1)."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def dry_run(server: WebhookServer, namespace: str) -> Obj:
    """The webhook's decision on a dry-run GPU pod: nothing created."""
    return server.review(gpu_pod("gpu", resource=GPU), namespace, dry_run=True)


def converted(response: Mapping[str, Any]) -> bool:
    return bool(response.get("allowed")) and bool(response.get("patch"))


def refused_for_quota(response: Mapping[str, Any], namespace: str) -> bool:
    message = str((response.get("status") or {}).get("message") or "")
    return not response.get("allowed") and f"ResourceQuota {namespace}/gpu-quota limits requests.{GPU}" in message


def quota_events(server: WebhookServer) -> float:
    """ADDED ResourceQuota events the webhook's watcher process applied."""
    for family in text_string_to_metric_families(server.metrics()):
        if family.name == "dra_migrate_webhook_watch_events":
            return sum(
                sample.value
                for sample in family.samples
                if sample.name.endswith("_total") and sample.labels == {"resource": "resourcequotas", "type": "ADDED"}
            )
    return 0.0


def quota(name: str, hard: Mapping[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": dict(hard)}}


def quiet_watch(plane: ControlPlane, result: dict[str, Any]) -> None:
    """A watch of a resource nobody writes, as long as the webhook ever asks for, to its end."""
    api = KubeResourceApi(load_configuration(plane.kubeconfig))
    version = api.list_page(POD_TEMPLATES, None, 10).resource_version
    started = time.monotonic()
    try:
        result["kinds"] = [kind for kind, _ in api.watch(POD_TEMPLATES, version, int(WATCH_SECONDS * WATCH_JITTER))]
    except ApiError as exc:
        result["error"] = str(exc)
    result["seconds"] = time.monotonic() - started


@pytest.fixture
def proxy(control_plane: ControlPlane) -> Iterator[StallingProxy]:
    address = urlsplit(control_plane.server)
    stalling = StallingProxy(str(address.hostname), int(address.port or 443))
    try:
        yield stalling
    finally:
        stalling.close()


@pytest.fixture
def proxied_webhook(control_plane: ControlPlane, proxy: StallingProxy) -> Iterator[WebhookServer]:
    """`dra-migrate serve` with deploy/'s configuration, talking to the API only through the proxy.

    Not registered with the apiserver: the test POSTs its reviews itself, so nothing but the
    webhook's own API calls goes through the proxy.
    """
    workdir = control_plane.workdir / "webhook-liveness"
    workdir.mkdir(parents=True, exist_ok=True)
    server = WebhookServer(
        tls=generate_tls(workdir / "tls"),
        kubeconfig=proxied_kubeconfig(control_plane, proxy.port, workdir / "proxied.kubeconfig"),
        log_path=control_plane.log_dir / "dra-migrate-webhook-liveness.log",
        workdir=workdir,
    )
    server.start(DEPLOY_SERVER_CONFIG)
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.usefixtures("fake_cluster")
def test_a_silently_dead_watch_is_not_trusted_past_the_bound(
    control_plane: ControlPlane,
    kube: Kube,
    namespace: str,
    proxy: StallingProxy,
    proxied_webhook: WebhookServer,
) -> None:
    quiet_result: dict[str, Any] = {}
    quiet = threading.Thread(target=quiet_watch, args=(control_plane, quiet_result), daemon=True)
    quiet.start()

    wait_for(
        lambda: converted(dry_run(proxied_webhook, namespace)),
        what="the webhook to convert a GPU pod",
    )
    # The pod's quota watch (its watcher process's) is live through the proxy: it applies a quota no
    # pod cares about. A watcher whose first list is still running would find the quota there instead
    # (no event): then another one.
    probes = iter(range(1000))

    def the_watch_applies_one() -> bool:
        before = quota_events(proxied_webhook)
        kube.create(quota(f"probe-{next(probes)}", {"count/configmaps": "100"}), namespace)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if quota_events(proxied_webhook) >= before + 1:
                return True
            time.sleep(0.25)
        return False

    wait_for(the_watch_applies_one, what="the watch to deliver a ResourceQuota", interval=0)
    assert converted(dry_run(proxied_webhook, namespace))

    assert proxy.stall() > 0
    stalled = time.monotonic()
    kube.create(quota("gpu-quota", {f"requests.{GPU}": "1"}), namespace)
    answers: list[Obj] = []

    def refused() -> bool:
        answers.append(dry_run(proxied_webhook, namespace))
        return refused_for_quota(answers[-1], namespace)

    # Without a liveness bound the copy is trusted until a read timeout minutes away; with it, the
    # quota is found within the bound.
    try:
        wait_for(refused, what="a refusal", timeout=WATCH_SILENCE_SECONDS + DETECTION_SLACK_S, interval=1.0)
    except AssertionError:
        raise AssertionError(
            f"{time.monotonic() - stalled:.0f}s after the connections stalled the webhook still ignores the "
            f"new GPU quota; last answer: {answers[-1] if answers else None}"
        ) from None
    print(f"\nwatch liveness: the answer changed {time.monotonic() - stalled:.1f}s after the connections stalled")

    # A healthy watch that carries nothing is never taken for a dead one: the server ends it first.
    quiet.join(timeout=WATCH_SILENCE_SECONDS + DETECTION_SLACK_S)
    assert not quiet.is_alive(), "a quiet watch outlived the silence bound"
    print(f"watch liveness: a quiet watch: {quiet_result}")
    assert "error" not in quiet_result and quiet_result["seconds"] < WATCH_SILENCE_SECONDS, quiet_result
