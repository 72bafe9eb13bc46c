"""The admission decision for one Pod: convert it, make its templates exist, answer.

Order of the checks and why:
1. Anything but a CREATE of a Pod is allowed untouched. The MutatingWebhookConfiguration
   registers CREATE only; an UPDATE that arrives anyway (another configuration, a manual
   test) gets no patch because a pod's resources and resourceClaims are immutable, so an
   already converted pod is left exactly as it is.
2. Opt-out (webhook/optout.py): allowed, no patch.
3. Conversion by the engine, with names a DeviceClass already serves through
   extendedResourceName either warned about or left out (policy `extendedResourceClasses`).
4. `audit` mode: no patch and no API call; warnings say what enforce mode would change.
5. `enforce`: the templates are created in the request's namespace (a dry run only reads
   them: nothing is created), then the patch. A template with our name but another spec ->
   deny (409). API failures follow `apiUnavailable`: deny (503) or admit unconverted with
   a warning. Engine errors (a part it could not convert) do not block the pod: they are
   warnings, and the rest is converted.

Nothing here raises for a well-formed request: an unexpected error is a denial with code 500.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra_migrate.engine import Config, ConversionResult, convert
from dra_migrate.webhook import messages
from dra_migrate.webhook.envelope import AdmissionRequest, AdmissionResponse
from dra_migrate.webhook.extended import ClassesByResource, ExtendedResourceIndex, without_resources
from dra_migrate.webhook.optout import opt_out_reason
from dra_migrate.webhook.patch import make_patch
from dra_migrate.webhook.podcheck import limit_problem, shape_problem, without_managed_fields
from dra_migrate.webhook.podresources import converted_resources, convertible, requested_resources
from dra_migrate.webhook.policy import WebhookPolicy
from dra_migrate.webhook.resource_api import ApiError
from dra_migrate.webhook.templates import TemplateConflictError, TemplateEnsurer

log = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    PATCHED = "patched"
    UNCHANGED = "unchanged"
    AUDITED = "audited"
    OPTED_OUT = "opted_out"
    IGNORED = "ignored"
    DENIED_CONFLICT = "denied_conflict"
    DENIED_API_UNAVAILABLE = "denied_api_unavailable"
    ADMITTED_API_UNAVAILABLE = "admitted_api_unavailable"
    DENIED_ERROR = "denied_error"
    DENIED_INVALID = "denied_invalid"


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    response: AdmissionResponse
    # Resource names converted (enforce) or that would be (audit), for metrics.
    converted: tuple[str, ...] = ()


def _decision_text(outcome: Outcome) -> str:
    return str(outcome).replace("_", "-")


def _deny(outcome: Outcome, code: int, message: str) -> Decision:
    text = messages.one_line(message, messages.MAX_ANNOTATION_CHARS)
    annotations = messages.audit_annotations({"decision": _decision_text(outcome), "reason": text})
    return Decision(
        outcome, AdmissionResponse(allowed=False, status_code=code, message=text, audit_annotations=annotations)
    )


def pod_label(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    name = metadata.get("name") or (f"{metadata['generateName']}*" if metadata.get("generateName") else "")
    return str(name or "(unnamed)")


class Reviewer:
    def __init__(
        self,
        config: Config,
        templates: TemplateEnsurer,
        extended: ExtendedResourceIndex | None = None,
        *,
        policy: WebhookPolicy | None = None,
    ) -> None:
        self._config = config
        self._policy = policy or WebhookPolicy()
        self._templates = templates
        self._extended = extended
        # Configs with some names left to the scheduler, reused so their lookup caches stay warm.
        self._skip_configs: dict[frozenset[tuple[str, tuple[str, ...]]], Config] = {}

    @property
    def mode(self) -> str:
        return self._policy.mode

    def review(self, request: AdmissionRequest) -> Decision:
        try:
            return self._review(request)
        except RecursionError:  # only user-made JSON nests this deep outside managedFields
            return _deny(Outcome.DENIED_INVALID, 400, "dra-migrate: the pod is nested too deeply to be a real Pod")
        except Exception as exc:
            log.exception("review %s failed", request.uid)
            return _deny(
                Outcome.DENIED_ERROR,
                500,
                f"dra-migrate could not process this pod ({type(exc).__name__}: {exc}); "
                "label it dra-migrate.io/skip=true to bypass conversion",
            )

    def _review(self, request: AdmissionRequest) -> Decision:
        if request.operation != "CREATE" or not request.is_pod or request.object is None:
            return Decision(Outcome.IGNORED, AdmissionResponse(allowed=True))
        pod = without_managed_fields(request.object)
        shape = shape_problem(pod)
        if shape is not None:
            return _deny(Outcome.DENIED_INVALID, shape.code, shape.message)
        reason = opt_out_reason(pod)
        if reason is not None:
            annotations = messages.audit_annotations({"decision": _decision_text(Outcome.OPTED_OUT), "reason": reason})
            return Decision(Outcome.OPTED_OUT, AdmissionResponse(allowed=True, audit_annotations=annotations))
        too_big = limit_problem(pod, self._config)
        if too_big is not None:
            return _deny(Outcome.DENIED_INVALID, too_big.code, too_big.message)

        config, served_notes = self._effective_config(pod)
        result = convert(pod, config)
        converted = converted_resources(pod, result.object, config)
        notes = [note for name, note in served_notes if name in converted]
        if not result.changed or result.object is None:
            return self._unchanged(result)
        if self._policy.mode == "audit":
            return self._audited(result, converted, notes)
        return self._enforce(request, pod, result, config, converted, notes)

    def _effective_config(self, pod: Mapping[str, Any]) -> tuple[Config, list[tuple[str, str]]]:
        """The config to convert with, and (resource, warning) notes about extendedResourceName classes."""
        served = self._extended.current() if self._extended is not None else {}
        if not served:
            return self._config, []
        requested = convertible(requested_resources(pod), self._config)
        relevant = {name: classes for name, classes in served.items() if name in requested}
        if not relevant:
            return self._config, []
        if self._policy.extended_resource_classes == "skip":
            return self._skip_config(relevant), []
        return self._config, [
            (
                name,
                f"{name} is also served by DeviceClass {', '.join(classes)} through spec.extendedResourceName "
                "(KEP-5004); converted to a claim anyway (webhook.extendedResourceClasses: warn)",
            )
            for name, classes in sorted(relevant.items())
        ]

    def _skip_config(self, served: ClassesByResource) -> Config:
        key = frozenset(served.items())
        config = self._skip_configs.get(key)
        if config is None:
            if len(self._skip_configs) > 64:  # the cluster's classes changed many times: start over
                self._skip_configs.clear()
            config = self._skip_configs[key] = without_resources(self._config, served)
        return config

    def _unchanged(self, result: ConversionResult) -> Decision:
        response = AdmissionResponse(
            allowed=True,
            warnings=messages.warnings_for(result.findings),
            audit_annotations=messages.audit_annotations(
                {"problems": messages.joined(messages.problems(result.findings))}
            ),
        )
        return Decision(Outcome.UNCHANGED, response)

    def _audited(self, result: ConversionResult, converted: list[str], notes: list[str]) -> Decision:
        response = AdmissionResponse(
            allowed=True,
            warnings=messages.warnings_for(result.findings, audit=True, extra=notes),
            audit_annotations=messages.audit_annotations(
                {
                    "decision": "audit-not-applied",
                    "would-convert": messages.joined(messages.changes(result.findings)),
                    "problems": messages.joined([*messages.problems(result.findings), *notes]),
                }
            ),
        )
        return Decision(Outcome.AUDITED, response, tuple(converted))

    def _enforce(
        self,
        request: AdmissionRequest,
        pod: dict[str, Any],
        result: ConversionResult,
        config: Config,
        converted: list[str],
        notes: list[str],
    ) -> Decision:
        assert result.object is not None
        templates = [self._in_namespace(t, request.namespace, config) for t in result.templates]
        try:
            created = self._templates.ensure(templates, create=not request.dry_run)
        except TemplateConflictError as exc:
            return _deny(Outcome.DENIED_CONFLICT, 409, str(exc))
        except ApiError as exc:
            return self._api_unavailable(pod, templates, exc)
        response = AdmissionResponse(
            allowed=True,
            patch=make_patch(pod, result.object),
            warnings=messages.warnings_for(result.findings, extra=notes),
            audit_annotations=messages.audit_annotations(
                {
                    "decision": "converted-dry-run" if request.dry_run else "converted",
                    "converted": messages.joined(messages.changes(result.findings)),
                    "problems": messages.joined([*messages.problems(result.findings), *notes]),
                    "templates-created": ",".join(created),
                }
            ),
        )
        return Decision(Outcome.PATCHED, response, tuple(converted))

    def _api_unavailable(self, pod: dict[str, Any], templates: list[dict[str, Any]], exc: ApiError) -> Decision:
        names = ", ".join(f"{t['metadata']['namespace']}/{t['metadata']['name']}" for t in templates)
        problem = f"cannot check or create ResourceClaimTemplate {names}: {exc.detail}"
        if self._policy.api_unavailable == "deny":
            return _deny(
                Outcome.DENIED_API_UNAVAILABLE,
                503,
                f"dra-migrate: pod {pod_label(pod)} not admitted: {problem} "
                "(webhook.apiUnavailable: deny); retry when the Kubernetes API is reachable",
            )
        warning = (
            f"{messages.PREFIX} warning: pod admitted WITHOUT conversion, it keeps its device-plugin requests: "
            f"{problem} (webhook.apiUnavailable: admit)"
        )
        response = AdmissionResponse(
            allowed=True,
            warnings=(messages.one_line(warning, messages.MAX_WARNING_CHARS),),
            audit_annotations=messages.audit_annotations({"decision": "admitted-unconverted", "reason": problem}),
        )
        return Decision(Outcome.ADMITTED_API_UNAVAILABLE, response)

    @staticmethod
    def _in_namespace(template: dict[str, Any], namespace: str, config: Config) -> dict[str, Any]:
        """The template as it is created: in the request's namespace (a generateName pod may carry
        none) and in the API version the target serves."""
        # The engine builds its templates fresh for each call: a shallow copy is enough.
        out = {**template, "metadata": {**template["metadata"], "namespace": namespace}}
        if out.get("apiVersion") != config.target.dra_api_version:
            written = convert(out, config).object
            if written is not None:
                out = written
        return out
