"""Workloads that run through Knative Serving, which refuses claims.

Knative Serving validates a Service's (Configuration's, Revision's) pod spec against its own
allow-list, and `resources.claims` and `resourceClaims` are not on it (an open upstream limitation).
A KServe InferenceService in Serverless mode is a Knative Service underneath. Such objects are not
rewritten to claims: the alternatives are KServe's RawDeployment (Standard) mode, or leaving the
device-plugin request to DRA through KEP-5004 (Kubernetes 1.36+, a DeviceClass with
extendedResourceName), which needs no change to the pod spec at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KNATIVE_GROUP = "serving.knative.dev"
KNATIVE_KINDS = ("Service", "Configuration", "Revision")
_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
_KNATIVE_AUTOSCALING = "autoscaling.knative.dev/"
_RAW_MODES = ("RawDeployment", "Standard")

ALTERNATIVES = (
    "Knative Serving refuses resources.claims and resourceClaims in the pod spec (an open upstream "
    "limitation), so this object is left as is; run it in KServe's RawDeployment (Standard) mode, or leave "
    "the request to DRA through KEP-5004 (Kubernetes 1.36+: a DeviceClass with extendedResourceName, "
    "--strategy extendedResource with --device-classes), which needs no change here"
)


def _annotations(*holders: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for holder in holders:
        metadata = holder.get("metadata") if isinstance(holder, Mapping) else None
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        if isinstance(annotations, Mapping):
            found.update({str(k): str(v) for k, v in annotations.items()})
        direct = holder.get("annotations") if isinstance(holder, Mapping) else None
        if isinstance(direct, Mapping):  # a KServe component's own annotations
            found.update({str(k): str(v) for k, v in direct.items()})
    return found


def knative_reason(obj: Mapping[str, Any], group: str) -> str | None:
    """Why `obj` runs through Knative Serving (then it cannot take claims), or None."""
    kind = obj.get("kind")
    if group == KNATIVE_GROUP and kind in KNATIVE_KINDS:
        return f"a Knative {kind}"
    if group != "serving.kserve.io" or kind != "InferenceService":
        return None
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    annotations = _annotations(obj, *(spec.get(c) for c in ("predictor", "transformer", "explainer")))
    mode = annotations.get(_MODE_ANNOTATION)
    if mode in _RAW_MODES:
        return None
    if mode == "Serverless":
        return f"an InferenceService in Serverless mode ({_MODE_ANNOTATION}: Serverless)"
    knative = sorted(k for k in annotations if k.startswith(_KNATIVE_AUTOSCALING))
    if knative:
        return f"an InferenceService run by Knative (its {knative[0]} annotation)"
    return None


def undeclared_mode(obj: Mapping[str, Any], group: str) -> bool:
    """An InferenceService that names no deployment mode: the cluster's inferenceservice-config decides."""
    return (
        group == "serving.kserve.io"
        and obj.get("kind") == "InferenceService"
        and _MODE_ANNOTATION not in _annotations(obj)
    )
