"""The AdmissionReview envelope: check what kube-apiserver sends, build what it expects back.

Pure functions; admission.k8s.io/v1 and v1beta1 share the fields used here, and the answer
carries the same apiVersion as the question.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class InvalidReviewError(ValueError):
    """Not a usable AdmissionReview request; answered with HTTP 400 and this message."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    api_version: str
    uid: str
    operation: str
    namespace: str
    group: str
    kind: str
    sub_resource: str
    dry_run: bool
    object: dict[str, Any] | None

    @property
    def is_pod(self) -> bool:
        return self.group == "" and self.kind == "Pod" and not self.sub_resource


@dataclass(frozen=True, slots=True)
class AdmissionResponse:
    allowed: bool
    patch: list[dict[str, Any]] | None = None
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)
    status_code: int | None = None
    message: str | None = None


def _text(value: Any, where: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise InvalidReviewError(f"{where} must be a non-empty string")
    return value


def parse_review(body: Any) -> AdmissionRequest:
    if not isinstance(body, dict):
        raise InvalidReviewError("the body must be a JSON object (an AdmissionReview)")
    api_version = body.get("apiVersion")
    if api_version not in API_VERSIONS:
        raise InvalidReviewError(f"apiVersion must be one of {', '.join(API_VERSIONS)}, got {api_version!r}")
    if body.get("kind") != "AdmissionReview":
        raise InvalidReviewError(f"kind must be AdmissionReview, got {body.get('kind')!r}")
    request = body.get("request")
    if not isinstance(request, dict):
        raise InvalidReviewError("request is missing or not an object")
    uid = _text(request.get("uid"), "request.uid", required=True)
    operation = _text(request.get("operation"), "request.operation", required=True)
    kind = request.get("kind")
    if not isinstance(kind, dict) or not isinstance(kind.get("kind"), str):
        raise InvalidReviewError("request.kind must be an object with group, version and kind")
    obj = request.get("object")
    if operation in ("CREATE", "UPDATE") and not isinstance(obj, dict):
        raise InvalidReviewError(f"request.object must be an object for {operation}")
    namespace = _text(request.get("namespace"), "request.namespace")
    if operation == "CREATE" and kind.get("kind") == "Pod" and not namespace:
        raise InvalidReviewError("request.namespace is required for a Pod (pods are namespaced)")
    if namespace and not _NAMESPACE.fullmatch(namespace):
        # kube-apiserver only sends namespaces that exist, whose names are DNS-1123 labels; any other
        # comes from a direct POST, and would end up in the path of the server's API calls.
        raise InvalidReviewError(f"request.namespace must be a namespace name (a DNS-1123 label), got {namespace!r}")
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise InvalidReviewError("request.dryRun must be a boolean")
    return AdmissionRequest(
        api_version=api_version,
        uid=uid,
        operation=operation,
        namespace=namespace,
        group=_text(kind.get("group"), "request.kind.group"),
        kind=kind["kind"],
        sub_resource=_text(request.get("subResource"), "request.subResource"),
        dry_run=dry_run,
        object=obj if isinstance(obj, dict) else None,
    )


def render_review(api_version: str, uid: str, response: AdmissionResponse) -> dict[str, Any]:
    out: dict[str, Any] = {"uid": uid, "allowed": response.allowed}
    if response.patch:
        encoded = json.dumps(response.patch, separators=(",", ":")).encode()
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(encoded).decode("ascii")
    if response.warnings:
        out["warnings"] = list(response.warnings)
    if response.audit_annotations:
        out["auditAnnotations"] = dict(response.audit_annotations)
    if response.status_code is not None or response.message is not None:
        status: dict[str, Any] = {}
        if response.status_code is not None:
            status["code"] = response.status_code
        if response.message is not None:
            status["message"] = response.message
        out["status"] = status
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": out}
