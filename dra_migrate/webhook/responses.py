"""The webhook's answers, by name: every decision is made with `allowed`, `patched` or `denied`.

A Decision pairs the AdmissionResponse with its Outcome (the metric label, and the
`decision` audit annotation) and the resource names converted (for the conversion metric).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_migrate.webhook import messages
from dra_migrate.webhook.envelope import AdmissionResponse


class Outcome(enum.StrEnum):
    PATCHED = "patched"
    UNCHANGED = "unchanged"
    AUDITED = "audited"
    OPTED_OUT = "opted_out"
    MIRROR_POD = "mirror_pod"  # a static pod's mirror: the kubelet's copy, never changed
    NOT_SELECTED = "not_selected"  # a namespace the configuration does not select (a direct POST)
    IGNORED = "ignored"
    DENIED_INVALID = "denied_invalid"  # a pod no apiserver sends, or one over the per-pod limits
    DENIED_CONFLICT = "denied_conflict"
    DENIED_TEMPLATE_LIMIT = "denied_template_limit"
    DENIED_QUOTA_GAP = "denied_quota_gap"
    DENIED_QUOTA_EXCEEDED = "denied_quota_exceeded"  # a used-up quota would refuse the pod's claims
    DENIED_FORBIDDEN = "denied_forbidden"  # 403 from the API: a quota, RBAC, a namespace being deleted
    DENIED_NOT_FOUND = "denied_not_found"  # 404 from the API: the namespace (or the API version) is missing
    DENIED_REJECTED = "denied_rejected"  # another 4xx: the apiserver refused the template itself
    DENIED_API_UNAVAILABLE = "denied_api_unavailable"
    ADMITTED_API_UNAVAILABLE = "admitted_api_unavailable"
    DENIED_ERROR = "denied_error"

    @property
    def decision(self) -> str:
        """The `decision` audit annotation value."""
        return self.value.replace("_", "-")


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    response: AdmissionResponse
    # Resource names converted (enforce) or that would be (audit), for metrics.
    converted: tuple[str, ...] = ()


def allowed(
    outcome: Outcome,
    *,
    warnings: Sequence[str] = (),
    annotations: Mapping[str, str] | None = None,
    converted: Sequence[str] = (),
) -> Decision:
    """Admit the pod as it is."""
    values = {"decision": outcome.decision, **(annotations or {})} if annotations is not None else {}
    return Decision(
        outcome,
        AdmissionResponse(allowed=True, warnings=tuple(warnings), audit_annotations=messages.audit_annotations(values)),
        tuple(converted),
    )


def patched(
    patch: list[dict[str, Any]],
    *,
    warnings: Sequence[str],
    annotations: Mapping[str, str],
    converted: Sequence[str],
) -> Decision:
    """Admit the pod with `patch` applied."""
    return Decision(
        Outcome.PATCHED,
        AdmissionResponse(
            allowed=True,
            patch=patch,
            warnings=tuple(warnings),
            audit_annotations=messages.audit_annotations(annotations),
        ),
        tuple(converted),
    )


def denied(outcome: Outcome, code: int, message: str) -> Decision:
    """Refuse the pod with an HTTP-like `code` and a one-line message (kubectl prints it)."""
    text = messages.one_line(message, messages.MAX_ANNOTATION_CHARS)
    annotations = messages.audit_annotations({"decision": outcome.decision, "reason": text})
    return Decision(
        outcome, AdmissionResponse(allowed=False, status_code=code, message=text, audit_annotations=annotations)
    )
