"""A used-up device quota refuses the pod at admission, on a real server, as the ResourceQuota plugin
refused the device-plugin pod before conversion (a converted pod was admitted and its claims refused,
so it stayed Pending)."""

from __future__ import annotations

from pathlib import Path

import pytest
from admission import make_review
from fakekube import FakeKubeServer
from pods import gpu_pod
from webhook_support import StartServer, decoded_patch, watching

DEVICES_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
HARD = {"requests.nvidia.com/gpu": "4", DEVICES_KEY: "4"}


@pytest.mark.parametrize("dry_run", [False, True], ids=["create", "dry-run"])
def test_a_used_up_device_quota_refuses_the_pod(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, dry_run: bool
) -> None:
    fake_kube.fake.add_quota("team-a", "gpus", HARD, used={"requests.nvidia.com/gpu": "0", DEVICES_KEY: "3"})
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourcequotas")
    response = server.review(make_review(gpu_pod(count=2), namespace="team-a", dry_run=dry_run))
    assert response["allowed"] is False and response["status"]["code"] == 403, response
    assert (
        f"exceeded quota: gpus, requested: {DEVICES_KEY}=2, used: {DEVICES_KEY}=3, limited: {DEVICES_KEY}=4"
        in response["status"]["message"]
    )
    assert response["auditAnnotations"]["decision"] == "denied-quota-exceeded"
    assert fake_kube.fake.calls_to("POST") == 0 and fake_kube.fake.templates == {}
    # What still fits is converted.
    fits = server.review(make_review(gpu_pod(name="one", count=1), namespace="team-a", dry_run=dry_run))
    assert fits["allowed"] is True and decoded_patch(fits)


def test_audit_mode_says_what_enforce_would_refuse(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.add_quota("team-a", "gpus", HARD, used={DEVICES_KEY: "4"})
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"mode": "audit"}})
    watching(fake_kube.fake, "resourcequotas")
    response = server.review(make_review(gpu_pod(count=1), namespace="team-a"))
    assert response["allowed"] is True and decoded_patch(response) is None
    assert any("exceeded quota: gpus" in warning for warning in response["warnings"]), response["warnings"]
