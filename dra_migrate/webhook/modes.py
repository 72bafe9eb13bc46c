"""One handler per webhook mode, for a pod the engine converted (webhook.mode, policy.Mode).

* `enforce`: the templates the converted pod references are made to exist in the request's
  namespace (a dry run only checks them: nothing is created), then the pod is patched into
  exactly the engine's result. A template with our name but another spec, or one more than
  the namespace may have, denies the pod; API failures are decided in webhook/failures.py.
  Engine errors (a part it could not convert) do not block the pod: they are warnings, and
  the rest is converted.
* `audit`: no patch and no API write; warnings and audit annotations say what enforce
  mode would change: the in-cluster dry run before switching on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dra_migrate.engine import ConversionResult
from dra_migrate.webhook import messages
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.envelope import AdmissionRequest
from dra_migrate.webhook.failures import api_failure
from dra_migrate.webhook.patch import make_patch
from dra_migrate.webhook.policy import Mode, WebhookPolicy
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


Handler = Callable[[ConvertedPod], Decision]


def audit(pod: ConvertedPod) -> Decision:
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


class Enforce:
    def __init__(self, templates: TemplateEnsurer, policy: WebhookPolicy) -> None:
        self._templates = templates
        self._policy = policy

    def __call__(self, pod: ConvertedPod) -> Decision:
        request, result = pod.request, pod.result
        assert result.object is not None
        templates = [_in_namespace(t, request.namespace) for t in result.templates]
        try:
            created = self._templates.ensure(templates, create=not request.dry_run, budget=pod.budget)
        except TemplateConflictError as exc:
            return denied(Outcome.DENIED_CONFLICT, 409, str(exc))
        except TemplateLimitError as exc:
            return denied(Outcome.DENIED_TEMPLATE_LIMIT, 403, f"dra-migrate: {exc}")
        except ApiError as exc:
            names = ", ".join(f"{request.namespace}/{t['metadata']['name']}" for t in templates)
            return api_failure(
                exc, self._policy, pod.pod, request.namespace, f"check or create ResourceClaimTemplate {names}"
            )
        return patched(
            make_patch(pod.pod, result.object),
            warnings=messages.warnings_for(result.findings, extra=pod.notes),
            annotations={
                "decision": "converted-dry-run" if request.dry_run else "converted",
                "converted": messages.joined(messages.changes(result.findings)),
                "problems": pod.problems(),
                "templates-created": ",".join(created),
            },
            converted=pod.converted,
        )


def _in_namespace(template: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The template as it is created: in the request's namespace (a generateName pod may carry none).
    The engine builds its templates fresh for each call, in the target's version: a shallow copy is enough."""
    return {**template, "metadata": {**template["metadata"], "namespace": namespace}}


def handlers(templates: TemplateEnsurer, policy: WebhookPolicy) -> dict[Mode, Handler]:
    return {Mode.ENFORCE: Enforce(templates, policy), Mode.AUDIT: audit}
