"""Template creation, API failures and DeviceClass lookups against a local fake of the API.

(The real apiserver is the e2e suite's job; here the fake answers over HTTP, watches
included, through a generated kubeconfig, so the server's real client is exercised.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from admission import make_review
from fakekube import FakeKubeServer, write_kubeconfig
from pods import gpu_pod
from polling import wait_until
from webhook_support import StartServer, decoded_patch, free_port, patched, watching

from dra_migrate.engine import at_admission, convert, default_config

TEMPLATE_READS = "/resourceclaimtemplates/"  # a GET of one template by name (lists have no trailing slash)
TEMPLATES = "/resourceclaimtemplates"


def _template_name(pod: dict[str, Any]) -> str:
    return str(convert(pod, default_config()).templates[0]["metadata"]["name"])


def test_template_created_once_then_known_from_the_watch(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourceclaimtemplates")
    pod = gpu_pod(count=2)
    first = server.review(make_review(pod, namespace="team-a"))
    name = _template_name(pod)
    assert first["auditAnnotations"]["templates-created"] == name
    stored = fake_kube.fake.templates[("team-a", name)]
    assert stored["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "dra-migrate"}
    assert stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    # The watched copy knew the template was missing: one POST, no GET.
    assert (fake_kube.fake.calls_to("GET", TEMPLATE_READS), fake_kube.fake.calls_to("POST", TEMPLATES)) == (0, 1)
    wait_until(lambda: _known_by_server(server, name), what="the watch to deliver the new template")
    for _ in range(20):
        again = server.review(make_review(gpu_pod(name="other", count=2), namespace="team-a"))
        assert decoded_patch(again) and "templates-created" not in again["auditAnnotations"]
    assert (fake_kube.fake.calls_to("GET", TEMPLATE_READS), fake_kube.fake.calls_to("POST", TEMPLATES)) == (0, 1)
    # Another namespace needs its own copy.
    server.review(make_review(pod, namespace="team-b"))
    assert ("team-b", name) in fake_kube.fake.templates
    assert fake_kube.fake.calls_to("POST", TEMPLATES) == 2


def _known_by_server(server: Any, name: str) -> bool:
    """Every worker's copy has applied the template's ADDED event (one worker here)."""
    metrics = server.session.get(f"{server.url}/metrics").text
    return 'dra_migrate_webhook_watch_events_total{resource="resourceclaimtemplates",type="ADDED"} 1.0' in metrics


def test_existing_identical_template_is_reused(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    pod = gpu_pod()
    fake_kube.fake.add_template(convert(pod, default_config()).templates[0], "team-a")
    server = start_server(kubeconfig=kubeconfig, workers=1)
    response = server.review(make_review(pod, namespace="team-a"))
    assert patched(pod, response) == convert(pod, at_admission(default_config())).object
    assert fake_kube.fake.calls_to("POST") == 0


def test_already_exists_on_create_is_success(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.lose_create_races = True
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourceclaimtemplates")
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert response["allowed"] is True and decoded_patch(response)
    assert fake_kube.fake.calls_to("POST", TEMPLATES) == 1
    assert fake_kube.fake.calls_to("GET", TEMPLATE_READS) == 1  # to compare with the winner's copy after the 409


@pytest.mark.parametrize(
    "change",
    ["spec", "claim labels", "claim annotations", "not dra-migrate's"],
)
def test_a_template_under_the_name_that_differs_is_left_alone_and_a_new_name_used(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, change: str
) -> None:
    """Used only when its whole spec and the metadata that reaches claims match, and it is ours."""
    pod = gpu_pod()
    template = convert(pod, default_config()).templates[0]
    name = template["metadata"]["name"]
    if change == "spec":
        template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 7
    elif change == "claim labels":
        template["spec"]["metadata"] = {"labels": {"billing": "team-b"}}
    elif change == "claim annotations":
        template["spec"]["metadata"] = {"annotations": {"example.com/owner": "team-b"}}
    else:
        template["metadata"]["labels"] = {"app": "mine"}
    fake_kube.fake.add_template(template, "team-a")
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourceclaimtemplates")
    for attempt in range(2):
        response = server.review(make_review(pod, namespace="team-a"))
        assert response["allowed"] is True
        claims = patched(pod, response)["spec"]["resourceClaims"]
        assert [claim["resourceClaimTemplateName"] for claim in claims] == [f"{name}-2"]
        assert response["auditAnnotations"].get("templates-created", "") == ("" if attempt else f"{name}-2")
    assert fake_kube.fake.templates[("team-a", name)]["spec"] == template["spec"]  # untouched
    ours = fake_kube.fake.templates[("team-a", f"{name}-2")]
    assert ours["spec"]["spec"] == convert(pod, default_config()).templates[0]["spec"]["spec"]
    assert "metadata" not in ours["spec"]


def test_every_name_taken_is_refused(start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path) -> None:
    pod = gpu_pod()
    template = convert(pod, default_config()).templates[0]
    name = template["metadata"]["name"]
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 7
    for taken in (name, *(f"{name}-{number}" for number in (2, 3, 4))):
        template["metadata"]["name"] = taken
        fake_kube.fake.add_template(template, "team-a")
    server = start_server(kubeconfig=kubeconfig, workers=1)
    response = server.review(make_review(pod, namespace="team-a"))
    assert response["allowed"] is False and response["status"]["code"] == 409
    assert f'ResourceClaimTemplate "team-a/{name}"' in response["status"]["message"]
    assert "different spec or claim metadata" in response["status"]["message"]
    metrics = server.session.get(f"{server.url}/metrics").text
    assert 'dra_migrate_webhook_reviews_total{outcome="denied_conflict"} 1.0' in metrics


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "unreachable", f"http://127.0.0.1:{free_port()}")


def test_api_unreachable_deny(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(kubeconfig=_unreachable_kubeconfig(tmp_path), config={"webhook": {"apiUnavailable": "deny"}})
    started = time.monotonic()
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert time.monotonic() - started < 5
    assert response["allowed"] is False
    assert response["status"]["code"] == 503
    message = response["status"]["message"]
    assert "not admitted" in message and "cannot reach the Kubernetes API" in message and "namespace team-a" in message
    assert response["auditAnnotations"]["decision"] == "denied-api-unavailable"
    metrics = server.session.get(f"{server.url}/metrics").text
    assert 'dra_migrate_webhook_api_errors_total{operation="get_namespaces",reason="unreachable"}' in metrics


def test_api_unreachable_admit(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(kubeconfig=_unreachable_kubeconfig(tmp_path), config={"webhook": {"apiUnavailable": "admit"}})
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert response["allowed"] is True
    assert "patch" not in response
    assert len(response["warnings"]) == 1
    assert "admitted WITHOUT conversion" in response["warnings"][0]
    assert response["auditAnnotations"]["decision"] == "admitted-unconverted"


def test_api_slow_is_bounded_by_timeout(start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path) -> None:
    fake_kube.fake.delay = 3.0
    server = start_server(kubeconfig=kubeconfig, config={"webhook": {"apiTimeoutSeconds": 0.5}})
    started = time.monotonic()
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    elapsed = time.monotonic() - started
    assert response["allowed"] is False and response["status"]["code"] == 503
    assert elapsed < 2.0, elapsed  # the first list of DeviceClasses waits at most 0.5 s too


def test_api_error_status_follows_policy(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.fail_status = 500
    server = start_server(kubeconfig=kubeconfig, config={"webhook": {"apiUnavailable": "admit"}})
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert response["allowed"] is True and "patch" not in response
    assert "HTTP 500" in response["warnings"][0]


SERVED = "DeviceClass 'gpu.nvidia.com' maps"


def _paths(response: dict[str, Any]) -> list[str]:
    return [w for w in response["warnings"] if "nvidia.com/gpu ->" in w]


@pytest.mark.parametrize(
    ("version", "config", "converted", "why"),
    [
        # The cluster's release decides: DRAExtendedResource is on by default from 1.36 (the release table).
        ("v1.36.1", {}, False, "nvidia.com/gpu -> extended-resource: " + SERVED),
        ("v1.34.4", {}, True, "DRAExtendedResource is off by default in Kubernetes 1.34"),
        ("v1.35.2-eks-4a3d6d8", {}, True, "DRAExtendedResource is off by default in Kubernetes 1.35"),
        # targetVersion in the configuration wins over the cluster's version; strategy `claims` always rewrites.
        ("v1.36.1", {"targetVersion": "1.35"}, True, "off by default in Kubernetes 1.35"),
        ("v1.36.1", {"strategy": "claims"}, True, "nvidia.com/gpu -> claim: strategy claims"),
    ],
)
def test_strategy_follows_the_clusters_release_and_device_classes(
    start_server: StartServer,
    fake_kube: FakeKubeServer,
    kubeconfig: Path,
    version: str,
    config: dict[str, Any],
    converted: bool,
    why: str,
) -> None:
    fake_kube.fake.version = version
    fake_kube.fake.add_device_class("gpu.nvidia.com", extended_resource_name="nvidia.com/gpu")
    server = start_server(kubeconfig=kubeconfig, config=config, workers=1)
    watching(fake_kube.fake, "deviceclasses")
    pod = gpu_pod()
    response = server.review(make_review(pod))
    assert ("patch" in response) is converted
    assert any(why in w for w in _paths(response)), response["warnings"]
    # A pod without that resource is converted whatever the release: no class serves it.
    amd = server.review(make_review(gpu_pod(resource="amd.com/gpu")))
    assert decoded_patch(amd)


def test_extended_resource_class_skip(start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path) -> None:
    fake_kube.fake.add_device_class("gpu.nvidia.com", extended_resource_name="nvidia.com/gpu")
    server = start_server(kubeconfig=kubeconfig, config={"webhook": {"extendedResourceClasses": "skip"}})
    pod = gpu_pod(count=2)
    pod["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"] = 1
    response = server.review(make_review(pod))
    converted = patched(pod, response)
    assert converted["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    claims = converted["spec"]["resourceClaims"]
    assert [c["resourceClaimTemplateName"][:11] for c in claims] == ["gpu-amd-com"]
    assert any("left to the scheduler" in w and "gpu.nvidia.com" in w for w in response["warnings"])
    # Only nvidia.com/gpu: nothing to convert at all.
    only = server.review(make_review(gpu_pod()))
    assert "patch" not in only and any("left to the scheduler" in w for w in only["warnings"])


def test_release_read_once_the_api_answers(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """Until GET /version answers, the configured target applies; then the cluster's release does."""
    fake_kube.fake.version = "v1.36.0"
    fake_kube.fake.add_device_class("gpu.nvidia.com", extended_resource_name="nvidia.com/gpu")
    fake_kube.fake.fail_status = 503
    server = start_server(kubeconfig=kubeconfig, workers=1)
    wait_until(lambda: fake_kube.fake.calls_to("GET", "/version") >= 1, what="the first read of /version")
    fake_kube.fake.fail_status = None
    wait_until(lambda: "patch" not in server.review(make_review(gpu_pod())), what="the 1.36 decision")


def test_extended_resource_classes_follow_the_watch(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.version = "v1.36.0"
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "deviceclasses")
    assert decoded_patch(server.review(make_review(gpu_pod())))
    fake_kube.fake.add_device_class("gpu.nvidia.com", extended_resource_name="nvidia.com/gpu")

    def left_to_the_scheduler() -> bool:
        return "patch" not in server.review(make_review(gpu_pod()))

    wait_until(left_to_the_scheduler, timeout=5, what="the DeviceClass watch")
    fake_kube.fake.delete("deviceclasses", "", "gpu.nvidia.com")
    wait_until(lambda: not left_to_the_scheduler(), timeout=5, what="the DeviceClass deletion")


def test_deviceclass_list_failure_does_not_fail_admission(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.fail_status = 503
    # With targetVersion given the copies start at once (no need to read the cluster's version first).
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"targetVersion": "1.34"})
    wait_until(lambda: fake_kube.fake.calls_to("GET", "/deviceclasses") >= 1, what="the DeviceClass list")
    fake_kube.fake.fail_status = None
    response = server.review(make_review(gpu_pod()))
    assert response["allowed"] is True and decoded_patch(response)
    metrics = server.session.get(f"{server.url}/metrics").text
    assert 'dra_migrate_webhook_api_errors_total{operation="list_deviceclasses",reason="http_503"}' in metrics
