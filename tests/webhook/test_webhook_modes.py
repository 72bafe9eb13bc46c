"""Modes and paths of a review on a real server: dry run, audit, opt-out, UPDATE, non-pods."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from admission import make_review
from fakekube import FakeKubeServer
from pods import gpu_pod
from webhook_support import ROOT, StartServer, decoded_patch, patched

from dra_migrate.engine import at_admission, convert, default_config
from dra_migrate.webhook.optout import SKIP_KEY


def test_dry_run_patches_but_creates_nothing(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig)
    pod = gpu_pod()
    response = server.review(make_review(pod, dry_run=True))
    assert response["allowed"] is True
    assert patched(pod, response) == convert(pod, at_admission(default_config())).object
    assert response["auditAnnotations"]["decision"] == "converted-dry-run"
    assert fake_kube.fake.calls_to("POST") == fake_kube.fake.calls_to("POST", "?dryRun=All") == 1
    assert fake_kube.fake.templates == {}
    # The real create afterwards does create it.
    server.review(make_review(pod))
    assert len(fake_kube.fake.templates) == 1


def _refusals(server: Any, pod: dict[str, Any]) -> list[tuple[bool, int, str]]:
    """(allowed, code, message) of a dry run and of the real create of `pod`, in that order."""
    answers = [server.review(make_review(pod, dry_run=dry_run)) for dry_run in (True, False)]
    return [(a["allowed"], a.get("status", {}).get("code", 0), a.get("status", {}).get("message", "")) for a in answers]


def test_dry_run_refuses_what_the_create_would_refuse_at_the_namespace_bound(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"maxTemplatesPerNamespace": 1}})
    server.review(make_review(gpu_pod(count=1)))  # the namespace's one template
    dry, real = _refusals(server, gpu_pod(count=2))
    assert dry == real and dry[0] is False and dry[1] == 403 and "maxTemplatesPerNamespace" in dry[2], (dry, real)
    assert len(fake_kube.fake.templates) == 1


def test_dry_run_refuses_what_the_apiservers_quota_would_refuse(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.create_status = 403
    fake_kube.fake.create_message = (
        'resourceclaimtemplates.resource.k8s.io "x" is forbidden: exceeded quota: objects, '
        "requested: count/resourceclaimtemplates.resource.k8s.io=1, "
        "used: count/resourceclaimtemplates.resource.k8s.io=4, limited: count/resourceclaimtemplates.resource.k8s.io=4"
    )
    server = start_server(kubeconfig=kubeconfig, workers=1)
    dry, real = _refusals(server, gpu_pod())
    assert dry == real and dry[0] is False and dry[1] == 403 and "exceeded quota: objects" in dry[2], (dry, real)
    assert fake_kube.fake.calls_to("POST", "?dryRun=All") == 1 and fake_kube.fake.templates == {}


def test_audit_mode_warns_without_patch_or_api_writes(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(config={"webhook": {"mode": "audit"}}, kubeconfig=kubeconfig)
    response = server.review(make_review(gpu_pod(count=3)))
    assert response["allowed"] is True
    assert "patch" not in response and "patchType" not in response
    assert any("audit mode, not applied" in w and "nvidia.com/gpu: 3" in w for w in response["warnings"])
    assert response["auditAnnotations"]["decision"] == "audit-not-applied"
    assert "nvidia.com/gpu" in response["auditAnnotations"]["would-convert"]
    assert fake_kube.fake.calls_to("GET", "/resourceclaimtemplates/") == 0  # not even a read of one
    assert fake_kube.fake.calls_to("POST") == 0
    metrics = server.session.get(f"{server.url}/metrics").text
    assert 'dra_migrate_webhook_reviews_total{outcome="audited"} 1.0' in metrics
    assert 'dra_migrate_webhook_conversions_total{mode="audit",resource="nvidia.com/gpu"} 1.0' in metrics


def test_opt_out_by_pod_label_and_annotation(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig)
    for where in ("labels", "annotations"):
        pod = gpu_pod()
        pod["metadata"].setdefault(where, {})[SKIP_KEY] = "true"
        response = server.review(make_review(pod))
        assert response["allowed"] is True
        assert "patch" not in response
        assert response["auditAnnotations"] == {"decision": "opted-out", "reason": f"pod {where[:-1]} {SKIP_KEY}=true"}
    # Only the exact value "true" opts out.
    pod = gpu_pod(labels={SKIP_KEY: "false"})
    assert decoded_patch(server.review(make_review(pod)))
    assert fake_kube.fake.calls_to("POST") == 1


def test_namespace_opt_out_is_the_namespace_selector() -> None:
    """Namespaces opt out by label, enforced by kube-apiserver through the webhook's namespaceSelector."""
    path = ROOT / "deploy" / "base" / "mutatingwebhookconfiguration.yaml"
    webhook = yaml.safe_load(path.read_text())["webhooks"][0]
    assert {"key": SKIP_KEY, "operator": "NotIn", "values": ["true"]} in webhook["namespaceSelector"][
        "matchExpressions"
    ]
    assert {"key": SKIP_KEY, "operator": "NotIn", "values": ["true"]} in webhook["objectSelector"]["matchExpressions"]


def test_update_of_converted_pod_is_allowed_without_patch(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig)
    pod = gpu_pod(labels={"app": "train"})
    converted = patched(pod, server.review(make_review(pod)))
    relabelled = copy.deepcopy(converted)
    relabelled["metadata"]["labels"]["team"] = "b"
    for new, old in ((relabelled, converted), (pod, converted)):
        response = server.review(make_review(new, operation="UPDATE", old=old))
        assert response == {"uid": response["uid"], "allowed": True}
    # Reinvocation (reinvocationPolicy IfNeeded) sends the converted pod again: nothing to do.
    again = server.review(make_review(converted))
    assert again["allowed"] is True and "patch" not in again


def test_other_operations_and_kinds_are_ignored(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig)
    delete = make_review(gpu_pod(), operation="DELETE", old=gpu_pod())
    delete["request"]["object"] = None
    assert server.review(delete) == {"uid": delete["request"]["uid"], "allowed": True}
    deployment = make_review({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}})
    deployment["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert server.review(deployment)["allowed"] is True
    binding = make_review(gpu_pod())
    binding["request"]["subResource"] = "binding"
    assert "patch" not in server.review(binding)
    assert fake_kube.fake.calls_to("POST") == 0
