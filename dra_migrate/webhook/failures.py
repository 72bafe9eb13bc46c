"""What an API error means for the pod under review: one decision and message per kind of failure.

Only an outage (no answer, a timeout, 5xx, 429) follows `webhook.apiUnavailable`. Every other
error is an answer from the apiserver, and admitting the pod unconverted as if the API were
down would hide it (a quota that refuses the pod's template would be bypassed), so they deny:

* 403: a ResourceQuota refuses the template (the quota is named in the message), the
  webhook's service account lacks a permission, or the namespace is being deleted;
* 404: the namespace does not exist (a pod for it cannot be created either), or the
  cluster does not serve the resource.k8s.io version the configuration targets;
* another 4xx: the apiserver rejected the template itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_migrate.webhook import messages
from dra_migrate.webhook.policy import WebhookPolicy
from dra_migrate.webhook.resource_api import ApiError, Failure
from dra_migrate.webhook.responses import Decision, Outcome, allowed, denied


def pod_label(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    name = metadata.get("name") or (f"{metadata['generateName']}*" if metadata.get("generateName") else "")
    return str(name or "(unnamed)")


def api_failure(exc: ApiError, policy: WebhookPolicy, pod: Mapping[str, Any], namespace: str, what: str) -> Decision:
    """The decision for a pod whose `what` ("create ResourceClaimTemplate ns/x", ...) failed with `exc`."""
    refused = f"dra-migrate: pod {pod_label(pod)} not admitted"
    failure = exc.failure
    if failure is Failure.UNAVAILABLE:
        return _unavailable(exc, policy, pod, what)
    if failure is Failure.FORBIDDEN:
        if exc.quota_exceeded:
            return denied(
                Outcome.DENIED_FORBIDDEN,
                403,
                f"{refused}: a ResourceQuota of namespace {namespace} does not allow the ResourceClaimTemplate it "
                f"needs ({exc.detail}); raise the quota's count/resourceclaimtemplates.resource.k8s.io or delete "
                "unused templates",
            )
        return denied(
            Outcome.DENIED_FORBIDDEN,
            403,
            f"{refused}: the Kubernetes API forbids dra-migrate to {what} ({exc.detail}); if the namespace is not "
            "being deleted, check the webhook's RBAC (deploy/base/rbac.yaml)",
        )
    if failure is Failure.NOT_FOUND:
        if exc.details_kind == "namespaces":
            return denied(Outcome.DENIED_NOT_FOUND, 404, f"{refused}: namespace {namespace} does not exist")
        return denied(
            Outcome.DENIED_NOT_FOUND,
            404,
            f"{refused}: cannot {what}: {exc.detail}; the cluster may not serve the resource.k8s.io version of "
            "the configured targetVersion",
        )
    return denied(
        Outcome.DENIED_REJECTED,
        exc.status or 400,
        f"{refused}: the Kubernetes API rejected the request to {what}: {exc.detail}",
    )


def _unavailable(exc: ApiError, policy: WebhookPolicy, pod: Mapping[str, Any], what: str) -> Decision:
    problem = f"cannot {what}: {exc.detail}"
    if policy.api_unavailable == "deny":
        return denied(
            Outcome.DENIED_API_UNAVAILABLE,
            503,
            f"dra-migrate: pod {pod_label(pod)} not admitted: {problem} (webhook.apiUnavailable: deny); "
            "retry when the Kubernetes API is reachable",
        )
    warning = (
        f"{messages.PREFIX} warning: pod admitted WITHOUT conversion, it keeps its device-plugin requests: "
        f"{problem} (webhook.apiUnavailable: admit)"
    )
    return allowed(
        Outcome.ADMITTED_API_UNAVAILABLE,
        warnings=(messages.one_line(warning, messages.MAX_WARNING_CHARS),),
        annotations={"decision": "admitted-unconverted", "reason": problem},
    )
