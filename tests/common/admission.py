"""AdmissionReview requests as kube-apiserver sends them to a mutating webhook, for the webhook's tests."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any


def make_review(
    pod: Mapping[str, Any],
    *,
    namespace: str = "team-a",
    operation: str = "CREATE",
    dry_run: bool = False,
    api_version: str = "admission.k8s.io/v1",
    old: Mapping[str, Any] | None = None,
    user_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": (pod.get("metadata") or {}).get("name", ""),
        "namespace": namespace,
        "operation": operation,
        "userInfo": dict(user_info or {"username": "tester", "groups": ["system:authenticated"]}),
        "object": copy.deepcopy(dict(pod)),
        "oldObject": copy.deepcopy(dict(old)) if old is not None else None,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}
