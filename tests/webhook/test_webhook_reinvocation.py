"""Every pod the apiserver sends, on a real server: a pod reviewed again after a later webhook
changed it (reinvocationPolicy: IfNeeded) and the mirror pods of static pods."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from admission import make_review
from fakekube import FakeKubeServer
from pods import container, gpu, pod_of, sidecar
from webhook_support import StartServer, decoded_patch, patched

from dra_migrate.engine import at_admission, convert, default_config


def _devices(fake: Any, pod: dict[str, Any], namespace: str = "team-a") -> dict[str, int]:
    """Pod claim name -> the device count of the template it is made from."""
    counts = {}
    for claim in pod["spec"].get("resourceClaims") or []:
        template = fake.templates[(namespace, claim["resourceClaimTemplateName"])]
        counts[claim["name"]] = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
    return counts


def _claims_of(pod: dict[str, Any], kind: str, index: int = 0) -> list[str]:
    return [claim["name"] for claim in pod["spec"][kind][index]["resources"].get("claims") or []]


def test_a_gpu_init_container_injected_later_shares_the_first_pass_claims(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """main 2 + an init container of 4 injected by a later webhook: the pod needs max(4, 2) = 4 devices."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    original = pod_of([container("main", gpu(2))])
    first = patched(original, server.review(make_review(original)))
    assert _devices(fake_kube.fake, first) == {"main-gpu": 2}
    injected = copy.deepcopy(first)  # what the later webhook leaves, which the apiserver sends again
    injected["spec"]["initContainers"] = [container("warmup", gpu(4))]
    again = patched(injected, server.review(make_review(injected)))
    devices = _devices(fake_kube.fake, again)
    assert sum(devices.values()) == 4, devices
    assert sum(devices[name] for name in _claims_of(again, "initContainers")) == 4
    assert [devices[name] for name in _claims_of(again, "containers")] == [2]
    # Exactly what a first pass gives the pod with both containers from the start.
    both = pod_of([container("main", gpu(2))], [container("warmup", gpu(4))])
    assert again == convert(both, at_admission(default_config())).object


def test_an_app_container_and_a_sidecar_injected_later_add_to_the_need(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """An init container of 3 converted first; a later webhook adds a sidecar of 1 started before it and
    an app container of 1: under the device plugin the pod needs max(1 + 3, 1 + 1 + 1) = 4 (the sidecar
    still runs beside the init container), and the claims add up to it."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    original = pod_of([container("main", gpu(1))], [container("prepare", gpu(3))])
    first = patched(original, server.review(make_review(original)))
    assert sum(_devices(fake_kube.fake, first).values()) == 3
    injected = copy.deepcopy(first)
    injected["spec"]["initContainers"].insert(0, sidecar("proxy", gpu(1)))
    injected["spec"]["containers"].append(container("exporter", gpu(1)))
    again = patched(injected, server.review(make_review(injected)))
    assert sum(_devices(fake_kube.fake, again).values()) == 4
    both = pod_of(
        [container("main", gpu(1)), container("exporter", gpu(1))],
        [sidecar("proxy", gpu(1)), container("prepare", gpu(3))],
    )
    assert again == convert(both, at_admission(default_config())).object


def test_a_reinvocation_without_new_requests_changes_nothing(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1)
    original = pod_of([container("main", gpu(2))], [container("prepare", gpu(4))])
    first = patched(original, server.review(make_review(original)))
    first["metadata"]["labels"] = {"injected": "by-another-webhook"}
    response = server.review(make_review(first))
    assert response["allowed"] is True and decoded_patch(response) is None


def test_mirror_pods_pass_untouched_with_a_warning(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1)
    mirror = pod_of([container("main", gpu(2))], nodeName="node-1")
    mirror["metadata"]["annotations"] = {
        "kubernetes.io/config.mirror": "4c6e0b8f0e8a4f8e",
        "kubernetes.io/config.source": "file",
    }
    response = server.review(make_review(mirror))
    assert response["allowed"] is True and decoded_patch(response) is None
    [warning] = response["warnings"]
    assert "mirror pod of a static pod left unconverted (main: nvidia.com/gpu)" in warning and "node-1" in warning
    assert response["auditAnnotations"]["decision"] == "mirror-pod"
    assert fake_kube.fake.calls_to("POST") == 0 and fake_kube.fake.templates == {}
    without_devices = pod_of([container("main")], nodeName="node-1")
    without_devices["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    quiet = server.review(make_review(without_devices))
    assert quiet["allowed"] is True and not quiet.get("warnings") and decoded_patch(quiet) is None
