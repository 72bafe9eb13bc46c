"""One handler per webhook mode (webhook.mode, policy.Mode): everything a mode decides differently.

A handler answers for a pod the engine converted, and says how the mode meets a quota gap and
an API failure on the way; the Reviewer (webhook/review.py) asks it and never looks at the mode.
A new mode is a value in policy.Mode and a class here, in HANDLERS.

* `enforce`: the templates the converted pod references are made to exist in the request's
  namespace (a dry run sends the creates as dry runs: refused as the real ones would be, nothing
  stored), then the pod is patched into the engine's result, its claims pointing at the names the
  templates were found or made under. Every name for a template taken by another one, or one
  more template than the namespace may have, denies the pod; API failures are decided in webhook/failures.py.
  Engine errors (a part it could not convert) do not block the pod: they are warnings, and
  the rest is converted.
* `audit`: no patch and no API write; warnings and audit annotations say what enforce
  mode would change: the in-cluster dry run before switching on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dra_migrate.engine import ConversionResult
from dra_migrate.webhook import messages
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.envelope import AdmissionRequest
from dra_migrate.webhook.failures import api_failure
from dra_migrate.webhook.patch import json_patch
from dra_migrate.webhook.policy import Mode, QuotaGap, WebhookPolicy
from dra_migrate.webhook.resource_api import ApiError
from dra_migrate.webhook.responses import Decision, Outcome, allowed, denied, patched
from dra_migrate.webhook.templates import TemplateConflictError, TemplateEnsurer, TemplateLimitError


@dataclass(frozen=True, slots=True)
class ConvertedPod:
    """A pod the engine changed, with what the review found out about it on the way."""

    request: AdmissionRequest
    pod: dict[str, Any]
    result: ConversionResult
    notes: tuple[str, ...]  # warnings beyond the engine's findings (served names, quota gaps)
    budget: Budget

    @property
    def converted(self) -> tuple[str, ...]:
        return tuple(self.result.converted_resources)

    def problems(self) -> str:
        return messages.joined([*messages.problems(self.result.findings), *self.notes])


class ModeHandler(Protocol):
    @property
    def mode(self) -> Mode:
        """The mode it decides for (metrics and logs name it)."""
        ...

    def __call__(self, pod: ConvertedPod) -> Decision:
        """The answer for a converted pod, once nothing else refused it."""
        ...

    def quota_gap_refusal(self, described: Sequence[str]) -> Decision | None:
        """The refusal for a pod that converting would take out of its quotas, or None to go on."""
        ...

    def quota_exceeded_refusal(self, described: Sequence[str]) -> Decision | None:
        """The refusal for a pod whose claims a used-up quota would refuse, or None to go on."""
        ...

    def api_failed(self, exc: ApiError, pod: Mapping[str, Any], namespace: str, what: str) -> Decision:
        """The answer when the API call for `what` failed before the pod was converted."""
        ...


class Audit:
    """Reports and never refuses: what enforce would do goes into warnings and audit annotations."""

    mode = Mode.AUDIT

    def __call__(self, pod: ConvertedPod) -> Decision:
        findings = pod.result.findings
        return allowed(
            Outcome.AUDITED,
            warnings=messages.warnings_for(findings, audit=True, extra=pod.notes),
            annotations={
                "decision": "audit-not-applied",
                "would-convert": messages.joined(messages.changes(findings)),
                "problems": pod.problems(),
            },
            converted=pod.converted,
        )

    def quota_gap_refusal(self, described: Sequence[str]) -> Decision | None:
        return None

    def quota_exceeded_refusal(self, described: Sequence[str]) -> Decision | None:
        return None

    def api_failed(self, exc: ApiError, pod: Mapping[str, Any], namespace: str, what: str) -> Decision:
        text = f"cannot {what}: {exc.detail}"
        warning = messages.one_line(f"{messages.PREFIX} warning (audit mode): {text}", messages.MAX_WARNING_CHARS)
        return allowed(Outcome.UNCHANGED, warnings=(warning,), annotations={"problems": text})


class Enforce:
    """Creates the pod's templates and patches it; refuses what it cannot convert safely."""

    mode = Mode.ENFORCE

    def __init__(self, templates: TemplateEnsurer, policy: WebhookPolicy) -> None:
        self._templates = templates
        self._policy = policy

    def quota_gap_refusal(self, described: Sequence[str]) -> Decision | None:
        if self._policy.quota_gap is not QuotaGap.DENY:
            return None
        return denied(
            Outcome.DENIED_QUOTA_GAP,
            403,
            f"dra-migrate: pod not admitted, converting it would take it out of its GPU quota: "
            f"{'; '.join(described)} (webhook.quotaGap: deny; `warn` or `convert` converts anyway)",
        )

    def quota_exceeded_refusal(self, described: Sequence[str]) -> Decision | None:
        return denied(
            Outcome.DENIED_QUOTA_EXCEEDED,
            403,
            f"dra-migrate: pod not admitted, its devices are over quota: {'; '.join(described)} (the ResourceClaims "
            "made for it would be refused and the pod left Pending)",
        )

    def api_failed(self, exc: ApiError, pod: Mapping[str, Any], namespace: str, what: str) -> Decision:
        return api_failure(exc, self._policy, pod, namespace, what)

    def __call__(self, pod: ConvertedPod) -> Decision:
        request, result = pod.request, pod.result
        assert result.object is not None
        templates = [_in_namespace(t, request.namespace) for t in result.templates]
        try:
            ensured = self._templates.ensure(templates, dry_run=request.dry_run, budget=pod.budget)
        except TemplateConflictError as exc:
            return denied(Outcome.DENIED_CONFLICT, 409, str(exc))
        except TemplateLimitError as exc:
            return denied(Outcome.DENIED_TEMPLATE_LIMIT, 403, f"dra-migrate: {exc}")
        except ApiError as exc:
            names = ", ".join(f"{request.namespace}/{t['metadata']['name']}" for t in templates)
            return api_failure(
                exc, self._policy, pod.pod, request.namespace, f"check or create ResourceClaimTemplate {names}"
            )
        _use_template_names(result.object, ensured.renamed)
        return patched(
            json_patch(result.changes),
            warnings=messages.warnings_for(result.findings, extra=pod.notes),
            annotations={
                "decision": "converted-dry-run" if request.dry_run else "converted",
                "converted": messages.joined(messages.changes(result.findings)),
                "problems": pod.problems(),
                "templates-created": ",".join(ensured.created),
            },
            converted=pod.converted,
        )


def _use_template_names(pod: dict[str, Any], renamed: Mapping[str, str]) -> None:
    """Point the pod's claims at the names the templates were ensured under (before the patch is made)."""
    if not renamed:
        return
    for claim in pod["spec"].get("resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName") if isinstance(claim, dict) else None
        if isinstance(name, str) and name in renamed:
            claim["resourceClaimTemplateName"] = renamed[name]


def _in_namespace(template: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The template as it is created: in the request's namespace (a generateName pod may carry none).
    The engine builds its templates fresh for each call, in the target's version: a shallow copy is enough."""
    return {**template, "metadata": {**template["metadata"], "namespace": namespace}}


HANDLERS: Mapping[Mode, Callable[[TemplateEnsurer, WebhookPolicy], ModeHandler]] = {
    Mode.ENFORCE: Enforce,
    Mode.AUDIT: lambda templates, policy: Audit(),
}


def handler_for(policy: WebhookPolicy, templates: TemplateEnsurer) -> ModeHandler:
    """The handler of the policy's mode, with what it may need."""
    return HANDLERS[policy.mode](templates, policy)
