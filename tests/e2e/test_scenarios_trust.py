"""Trust and correctness of the webhook against the real control plane (kube-apiserver 1.34 with
the resourcequota controller running).

* a POST to /mutate that bypasses the apiserver creates templates only in namespaces the
  configuration selects, and the number of templates per namespace is bounded even for pods
  that fail validation after the webhook ran;
* a deleted or replaced template is never referenced once the webhook's watch has delivered the
  change (milliseconds; the test waits for it on the webhook's watch-event metric);
* a ResourceQuota that refuses the template is a 403 decision, never "API unavailable";
* a namespace whose GPU quota converted pods would escape: the bypass itself (quotaGap: convert),
  the default refusal, and the per-class key that closes the gap.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from pods import gpu_pod
from polling import wait_for
from prometheus_client.parser import text_string_to_metric_families

from dra_migrate.engine import Target

from .cluster_fixtures import (
    RESOURCE_API,
    Kube,
    claims_owned_by,
    create_quota,
    delete_namespace,
    device_class,
    nvidia_type_selector,
)
from .webhook_process import LocalWebhook, WebhookServer, deploy_server_config

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
SKIP_KEY = "dra-migrate.io/skip"
DEVICES_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


@pytest.fixture(autouse=True)
def _default_webhook(webhook: LocalWebhook) -> Iterator[None]:
    webhook.ensure_default()
    yield


def with_webhook(**settings: Any) -> dict[str, Any]:
    """deploy/base/config.yaml with some `webhook:` settings changed."""
    config = deploy_server_config()
    config["webhook"] = {**config["webhook"], **settings}
    return config


def templates_in(kube: Kube, namespace: str) -> list[str]:
    return sorted(t["metadata"]["name"] for t in kube.list(RESOURCE_API, "ResourceClaimTemplate", namespace))


def refusal(call: Any) -> Obj:
    """The Status of a create the apiserver refused."""
    with pytest.raises(ApiException) as refused:
        call()
    status: Obj = json.loads(refused.value.body or "{}")
    return status


@pytest.fixture
def labelled_namespace(kube: Kube) -> Iterator[str]:
    created = kube.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"generateName": "e2e-quiet-", "labels": {SKIP_KEY: "true"}},
        }
    )
    name = str(created["metadata"]["name"])
    try:
        yield name
    finally:
        delete_namespace(kube, name)


# --------------------------------------------------------------------------- finding 3


def test_direct_posts_create_templates_only_where_the_configuration_selects(
    kube: Kube, namespace: str, labelled_namespace: str, webhook: LocalWebhook
) -> None:
    for excluded in ("kube-system", "dra-migrate", labelled_namespace):
        response = webhook.server.review(gpu_pod("direct"), excluded)
        assert response["allowed"] is True and "patch" not in response, response
        assert response["auditAnnotations"]["decision"] == "not-selected"
    assert templates_in(kube, "kube-system") == [] and templates_in(kube, labelled_namespace) == []
    # A namespace that does not exist: its own decision, not an outage, and nothing is created.
    missing = webhook.server.review(gpu_pod("direct"), f"missing-{uuid.uuid4().hex[:8]}")
    assert missing["allowed"] is False and missing["status"]["code"] == 404
    assert "does not exist" in missing["status"]["message"]
    # A selected namespace gets its template, as through the apiserver.
    selected = webhook.server.review(gpu_pod("direct"), namespace)
    assert selected["allowed"] is True and "patch" in selected
    assert len(templates_in(kube, namespace)) == 1


def test_example_names_are_not_converted(kube: Kube, namespace: str) -> None:
    created = kube.create(gpu_pod("example", resource="example.com/gpu"), namespace)
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"example.com/gpu": "1"}
    assert "resourceClaims" not in created["spec"] and templates_in(kube, namespace) == []


def test_templates_per_namespace_are_bounded_even_for_invalid_pods(
    kube: Kube, namespace: str, webhook: LocalWebhook
) -> None:
    """The webhook runs before validation: pods that are then rejected still made their templates."""
    with webhook.running_with("bounded", with_webhook(maxTemplatesPerNamespace=2)):
        answers = []
        for profile in ("1g.5gb", "2g.10gb", "3g.20gb"):
            invalid = gpu_pod(f"mig-{profile.replace('.', '-')}", resource=f"nvidia.com/mig-{profile}")
            invalid["spec"]["restartPolicy"] = "Sometimes"  # passes decoding, fails validation after admission
            answers.append(refusal(lambda pod=invalid: kube.create(pod, namespace)))
        assert [a["code"] for a in answers] == [422, 422, 403], answers
        assert "namespace " + namespace + " already has 2 ResourceClaimTemplates" in answers[2]["message"]
        assert len(templates_in(kube, namespace)) == 2


WORKERS = 2  # `serve`'s default, which the harness keeps
MIG_PROFILES = ("1g.5gb", "1g.10gb", "2g.10gb", "2g.20gb", "3g.20gb", "3g.40gb", "4g.20gb", "4g.40gb", "7g.80gb")


def referenced_templates(response: Obj) -> set[str]:
    """The ResourceClaimTemplate names an admitted pod's JSON patch refers to."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("resourceClaimTemplateName"), str):
                names.add(node["resourceClaimTemplateName"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(base64.b64decode(response.get("patch", "")) or "[]"))
    return names


def reviewed(server: WebhookServer, pod: Obj, namespace: str, start: threading.Barrier) -> Obj | None:
    """The AdmissionResponse, or None when the server was too busy to review (429: kube-apiserver
    applies the failure policy, nothing was created)."""
    try:
        return server.review(pod, namespace, start=start)
    except AssertionError as refused:
        if str(refused).startswith("429:"):
            return None
        raise


def test_templates_per_namespace_stay_bounded_under_a_burst_from_three_replicas(
    kube: Kube, namespace: str, webhook: LocalWebhook
) -> None:
    """Three replicas of two workers each get the same 27 pods needing distinct templates, all at
    once. The limit (8) is passed by at most the creations that can be in flight together (one per
    worker: 5 more); every admitted pod's templates exist and every other pod is refused by the
    limit. Before, each worker counted from its own copy while dozens of its reviews created."""
    limit, replicas = 8, 3
    config = webhook.write_config("burst", with_webhook(maxTemplatesPerNamespace=limit))
    servers = [
        WebhookServer(
            tls=webhook.server.tls,
            kubeconfig=webhook.server.kubeconfig,
            log_path=webhook.workdir / f"replica-{index}.log",
            workdir=webhook.workdir / f"replica-{index}",
        )
        for index in range(replicas)
    ]
    pods = [
        gpu_pod(f"burst-{count}-{profile.replace('.', '-')}", resource=f"nvidia.com/mig-{profile}", count=count)
        for profile in MIG_PROFILES
        for count in (1, 2, 3)
    ]
    try:
        for server in servers:
            server.start(config)
        reviews = [(server, pod) for offset, server in enumerate(servers) for pod in pods[offset:] + pods[:offset]]
        start = threading.Barrier(len(reviews))
        with ThreadPoolExecutor(max_workers=len(reviews)) as pool:
            answers = [
                answer for answer in pool.map(lambda job: reviewed(job[0], job[1], namespace, start), reviews) if answer
            ]
    finally:
        for server in servers:
            server.stop()
    existing = set(templates_in(kube, namespace))
    assert limit <= len(existing) <= limit + replicas * WORKERS - 1, len(existing)
    admitted = [answer for answer in answers if answer["allowed"]]
    assert admitted and all(referenced_templates(answer) <= existing for answer in admitted)
    for refused in (answer for answer in answers if not answer["allowed"]):
        assert refused["status"]["code"] == 403, refused
        assert f"already has {limit} ResourceClaimTemplates" in refused["status"]["message"], refused


# --------------------------------------------------------------------------- finding 4


def watch_applied(webhook: LocalWebhook, kind: str, resource: str = "resourceclaimtemplates") -> float:
    """Watch events of `kind` the webhook's workers applied to their copies of `resource` (summed)."""
    for family in text_string_to_metric_families(webhook.server.metrics()):
        if family.name == "dra_migrate_webhook_watch_events":
            return sum(
                sample.value
                for sample in family.samples
                if sample.name.endswith("_total") and sample.labels == {"resource": resource, "type": kind}
            )
    return 0.0


def changed_in_the_copy(
    webhook: LocalWebhook, kind: str, before: float, resource: str = "resourceclaimtemplates"
) -> None:
    """Wait until the pod's watch (its watcher process's, which every worker reads) has applied the
    change (milliseconds, but not zero)."""
    wait_for(
        lambda: watch_applied(webhook, kind, resource) >= before + 1,
        what=f"the webhook to see {kind} {resource}",
    )


def test_replaced_or_deleted_template_is_never_referenced(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    first = kube.create(gpu_pod("first"), namespace)
    [name] = [c["resourceClaimTemplateName"] for c in first["spec"]["resourceClaims"]]
    deleted = watch_applied(webhook, "DELETED")
    kube.delete(RESOURCE_API, "ResourceClaimTemplate", name, namespace)
    changed_in_the_copy(webhook, "DELETED", deleted)
    # Deleted: the next pod gets it created again.
    kube.create(gpu_pod("second"), namespace)
    assert kube.get(RESOURCE_API, "ResourceClaimTemplate", name, namespace) is not None
    # Replaced with the same name and another spec: never reused, the next pod gets its own under the next name.
    deleted, added = watch_applied(webhook, "DELETED"), watch_applied(webhook, "ADDED")
    kube.delete(RESOURCE_API, "ResourceClaimTemplate", name, namespace)
    kube.create(
        {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "dra-migrate"}},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}
                        ]
                    }
                }
            },
        },
        namespace,
    )
    changed_in_the_copy(webhook, "DELETED", deleted)
    changed_in_the_copy(webhook, "ADDED", added)
    third = kube.create(gpu_pod("third"), namespace)
    assert [c["resourceClaimTemplateName"] for c in third["spec"]["resourceClaims"]] == [f"{name}-2"]
    replaced = kube.get(RESOURCE_API, "ResourceClaimTemplate", name, namespace)
    assert replaced is not None and "allocationMode" in str(replaced["spec"]) and "All" in str(replaced["spec"])


# --------------------------------------------------------------------------- the strategy, from the cluster


def test_webhook_decides_with_the_clusters_release_and_device_classes(
    kube: Kube, namespace: str, target: Target, webhook: LocalWebhook
) -> None:
    """deploy/'s configuration as shipped (no targetVersion, no clusterDeviceClasses): the release
    comes from the apiserver, the DeviceClass that maps nvidia.com/gpu from the webhook's watch, and
    `strategy: auto` leaves whole GPUs to KEP-5004 exactly where the release has it on by default."""
    mapped = device_class("extended.gpu.nvidia.com", nvidia_type_selector("gpu"))
    mapped["spec"]["extendedResourceName"] = GPU
    added = watch_applied(webhook, "ADDED", "deviceclasses")
    kube.create(mapped)
    try:
        changed_in_the_copy(webhook, "ADDED", added, "deviceclasses")
        pod = kube.create(gpu_pod("whole", count=2), namespace, dry_run="All")
        if target.feature_enabled("DRAExtendedResource"):
            assert pod["spec"]["containers"][0]["resources"]["limits"] == {GPU: "2"}, pod["spec"]
            assert not pod["spec"].get("resourceClaims")
        else:
            assert pod["spec"].get("resourceClaims") and GPU not in (
                pod["spec"]["containers"][0]["resources"].get("limits") or {}
            ), pod["spec"]
    finally:
        deleted = watch_applied(webhook, "DELETED", "deviceclasses")
        kube.delete(RESOURCE_API, "DeviceClass", "extended.gpu.nvidia.com")
        changed_in_the_copy(webhook, "DELETED", deleted, "deviceclasses")


# --------------------------------------------------------------------------- finding 8


def test_quota_refusing_the_template_is_a_403_not_an_outage(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    create_quota(kube, namespace, "no-templates", {"count/resourceclaimtemplates.resource.k8s.io": "0"})
    with webhook.running_with("admit", with_webhook(apiUnavailable="admit")):
        status = refusal(lambda: kube.create(gpu_pod("quota"), namespace))
    assert status["code"] == 403, status
    message = status["message"]
    assert "a ResourceQuota of namespace" in message and "exceeded quota: no-templates" in message, message
    assert "unavailable" not in message and "WITHOUT conversion" not in message
    assert kube.get("v1", "Pod", "quota", namespace) is None and templates_in(kube, namespace) == []


# --------------------------------------------------------------------------- finding 12


def _gpu_quota(kube: Kube, namespace: str, hard: Mapping[str, str]) -> None:
    create_quota(kube, namespace, "gpu-quota", hard)


def dry_run_admitted(kube: Kube, namespace: str, name: str) -> bool:
    """Whether a dry run of a GPU pod is admitted: what the webhook's watched copy of the quota says."""
    try:
        kube.create(gpu_pod(name), namespace, dry_run="All")
    except ApiException:
        return False
    return True


def webhook_sees_usage(kube: Kube, namespace: str) -> bool:
    """A dry run of a pod over the quota is refused: the webhook's watched copy has the quota's usage."""
    return not dry_run_admitted(kube, namespace, "probe-usage")


def _used(kube: Kube, namespace: str) -> dict[str, str]:
    quota = kube.get("v1", "ResourceQuota", "gpu-quota", namespace) or {}
    return dict((quota.get("status") or {}).get("used") or {})


def test_converted_pods_escape_a_gpu_quota_when_allowed_to(kube: Kube, namespace: str, webhook: LocalWebhook) -> None:
    """The bypass itself (quotaGap: convert): 3 GPUs against a quota of 1, and the quota counts none."""
    _gpu_quota(kube, namespace, {"requests.nvidia.com/gpu": "1"})
    with webhook.running_with("convert", with_webhook(quotaGap="convert")):
        for index in range(3):
            kube.create(gpu_pod(f"gpu-{index}"), namespace)
    pods = [kube.get("v1", "Pod", f"gpu-{index}", namespace) for index in range(3)]
    claims = wait_for(
        lambda: (
            [c for pod in pods if pod for c in claims_owned_by(kube, namespace, pod)]
            if all(claims_owned_by(kube, namespace, pod) for pod in pods if pod)
            else None
        ),
        what="a claim for each of the 3 pods",
    )
    assert len(claims) == 3
    wait_for(lambda: _used(kube, namespace).get("requests.nvidia.com/gpu") == "0", what="the quota's usage")


def test_quota_gap_is_refused_by_default_and_closed_by_the_class_key(kube: Kube, namespace: str) -> None:
    _gpu_quota(kube, namespace, {"requests.nvidia.com/gpu": "1"})
    status = refusal(lambda: kube.create(gpu_pod("gpu-0"), namespace))
    assert status["code"] == 403, status
    message = status["message"]
    assert f"ResourceQuota {namespace}/gpu-quota limits requests.nvidia.com/gpu" in message, message
    assert f'add "{DEVICES_KEY}"' in message and "webhook.quotaGap: deny" in message
    assert templates_in(kube, namespace) == []

    # With the per-class key the claims are charged: the first pod gets its device, and the second is
    # refused at admission with the quota's own words, as the device plugin's pod was before conversion
    # (it used to be admitted and left Pending, its claim refused by the quota).
    kube.patch(
        "v1",
        "ResourceQuota",
        "gpu-quota",
        {"spec": {"hard": {"requests.nvidia.com/gpu": "1", DEVICES_KEY: "1"}}},
        namespace,
    )
    wait_for(lambda: DEVICES_KEY in (_used(kube, namespace) or {}) or None, what="the quota to count the key")
    # The webhook's copy follows the quota's watch: milliseconds behind the API, not zero.
    wait_for(
        lambda: dry_run_admitted(kube, namespace, "probe-key"), what="the webhook's copy of the quota to show the key"
    )
    first = kube.create(gpu_pod("gpu-1"), namespace)
    wait_for(lambda: claims_owned_by(kube, namespace, first), what="the first pod's claim")
    wait_for(lambda: _used(kube, namespace).get(DEVICES_KEY) == "1", what="the quota to charge the first claim")
    wait_for(lambda: webhook_sees_usage(kube, namespace), what="the webhook's copy of the quota to show the usage")
    status = refusal(lambda: kube.create(gpu_pod("gpu-2"), namespace))
    assert status["code"] == 403, status
    assert (
        f"exceeded quota: gpu-quota, requested: {DEVICES_KEY}=1, used: {DEVICES_KEY}=1, limited: {DEVICES_KEY}=1"
        in status["message"]
    ), status
    assert kube.get("v1", "Pod", "gpu-2", namespace) is None
