"""The webhook against the real control plane where the apiserver's own behaviour decides:

* a mirror pod of a static GPU pod is admitted as the kubelet wrote it (a converted mirror pod
  left a template behind and the mirror pod could not be made), with the webhook's warning;
* a server-side dry run is refused exactly where the create is: the namespace's template bound
  and a ResourceQuota on the number of templates (the dry run passed where the create failed,
  so `kubectl apply --dry-run=server` and Argo CD's diff lied), and stores nothing;
* templates no pod uses any more are collected (they were never deleted: 80 pods created and
  deleted left 80).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from pods import container, gpu, gpu_pod, pod_of
from polling import wait_for

from .cluster_fixtures import RESOURCE_API, Kube, create_quota
from .webhook_process import LocalWebhook, deploy_server_config

Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def _default_webhook(webhook: LocalWebhook) -> Iterator[None]:
    webhook.ensure_default()
    yield


def _templates(kube: Kube, namespace: str) -> list[str]:
    return sorted(t["metadata"]["name"] for t in kube.list(RESOURCE_API, "ResourceClaimTemplate", namespace))


def _refusal(call: Any) -> Obj:
    with pytest.raises(ApiException) as refused:
        call()
    status: Obj = json.loads(refused.value.body or "{}")
    return status


def test_a_mirror_pod_is_admitted_as_the_kubelet_wrote_it(kube: Kube, namespace: str) -> None:
    node = "device-plugin-node-1"
    mirror = pod_of([container("main", gpu(2))], name=f"static-gpu-{node}", nodeName=node)
    mirror["metadata"]["annotations"] = {
        "kubernetes.io/config.mirror": "0f3c6d2b6c1e4c4f9d1b6a2f8e7d5c4b",
        "kubernetes.io/config.source": "file",
    }
    created = kube.create(mirror, namespace)
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert not created["spec"].get("resourceClaims")
    assert _templates(kube, namespace) == []


def test_a_dry_run_is_refused_where_the_create_is(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    config = deploy_server_config()
    config["webhook"] = {**config["webhook"], "maxTemplatesPerNamespace": 1}
    with webhook.running_with("one-template", config):
        kube.create(gpu_pod("first", count=1), namespace)
        dry = _refusal(lambda: kube.create(gpu_pod("second", count=2), namespace, dry_run="All"))
        real = _refusal(lambda: kube.create(gpu_pod("second", count=2), namespace))
        statuses = [dry, real]
    assert [s["code"] for s in statuses] == [403, 403], statuses
    assert all("maxTemplatesPerNamespace" in s["message"] for s in statuses), statuses
    assert len(_templates(kube, namespace)) == 1


def test_a_dry_run_meets_the_quota_on_templates(kube: Kube, namespace: str) -> None:
    create_quota(kube, namespace, "no-templates", {"count/resourceclaimtemplates.resource.k8s.io": "0"})
    dry = _refusal(lambda: kube.create(gpu_pod("dry"), namespace, dry_run="All"))
    real = _refusal(lambda: kube.create(gpu_pod("real"), namespace))
    assert dry["code"] == real["code"] == 403, (dry, real)
    assert "exceeded quota: no-templates" in dry["message"] and "exceeded quota: no-templates" in real["message"]
    assert _templates(kube, namespace) == [] and kube.get("v1", "Pod", "real", namespace) is None


def test_templates_no_pod_uses_are_collected(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    """The collector's conditional mark (merge patch with a resourceVersion) and its delete with
    preconditions, as the real apiserver takes them: the template of a deleted pod goes, the one
    a pod still uses stays."""
    config = deploy_server_config()
    config["webhook"] = {**config["webhook"], "unusedTemplateGraceSeconds": 2}
    with webhook.running_with("collecting", config):
        kept = kube.create(gpu_pod("kept", count=1), namespace)
        gone = kube.create(gpu_pod("gone", count=2), namespace)
        [kept_template] = [c["resourceClaimTemplateName"] for c in kept["spec"]["resourceClaims"]]
        [gone_template] = [c["resourceClaimTemplateName"] for c in gone["spec"]["resourceClaims"]]
        kube.delete("v1", "Pod", "gone", namespace, grace_period_seconds=0)
        wait_for(
            lambda: gone_template not in _templates(kube, namespace), what="the unused template deleted", timeout=90
        )
        assert kept_template in _templates(kube, namespace)
        unused = kube.get(RESOURCE_API, "ResourceClaimTemplate", kept_template, namespace) or {}
        assert "dra-migrate.io/unused-since" not in (unused.get("metadata", {}).get("annotations") or {})
