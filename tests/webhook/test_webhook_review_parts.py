"""The Reviewer's seams: collaborators are injected, and every mode-specific answer comes from the
mode's handler (a new mode is a handler in webhook/modes.py and a value in webhook/policy.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from admission import make_review
from fakekube import FakeKube
from pods import gpu_pod

from dra_migrate.engine import default_config
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.envelope import parse_review
from dra_migrate.webhook.extended import ExtendedResourceIndex
from dra_migrate.webhook.modes import HANDLERS, ConvertedPod, handler_for
from dra_migrate.webhook.policy import WEBHOOK_SCHEMA, Mode, WebhookPolicy
from dra_migrate.webhook.quota import QuotaRecord
from dra_migrate.webhook.resource_api import ApiError
from dra_migrate.webhook.responses import Decision, Outcome, allowed, denied
from dra_migrate.webhook.review import Reviewer, ReviewParts
from dra_migrate.webhook.templates import TemplateEnsurer


class RecordingHandler:
    """A mode of its own: admits every converted pod unpatched and remembers what it was asked."""

    mode = Mode.AUDIT

    def __init__(self) -> None:
        self.converted: list[ConvertedPod] = []
        self.failures: list[str] = []

    def __call__(self, pod: ConvertedPod) -> Decision:
        self.converted.append(pod)
        return allowed(Outcome.AUDITED)

    def quota_gap_refusal(self, described: Sequence[str]) -> Decision | None:
        return denied(Outcome.DENIED_QUOTA_GAP, 403, "; ".join(described))

    def quota_exceeded_refusal(self, described: Sequence[str]) -> Decision | None:
        return denied(Outcome.DENIED_QUOTA_EXCEEDED, 403, "; ".join(described))

    def api_failed(self, exc: ApiError, pod: Mapping[str, Any], namespace: str, what: str) -> Decision:
        self.failures.append(what)
        return allowed(Outcome.UNCHANGED)


class Namespaces:
    def __init__(self, error: ApiError | None = None) -> None:
        self.error = error

    def skip_reason(self, namespace: str, budget: Budget) -> str | None:
        if self.error is not None:
            raise self.error
        return None


class NoQuotas:
    def quotas(self, namespace: str, budget: Budget) -> list[QuotaRecord]:
        return []


def reviewer(handler: RecordingHandler, namespaces: Namespaces) -> Reviewer:
    parts = ReviewParts(
        namespaces=namespaces,
        quotas=NoQuotas(),
        extended=ExtendedResourceIndex(lambda: None, first_wait=0),
        cluster_target=lambda: None,
        handler=handler,
    )
    return Reviewer(default_config(), parts)


def test_a_converted_pod_goes_to_the_injected_handler_without_any_api() -> None:
    handler = RecordingHandler()
    decision = reviewer(handler, Namespaces()).review(parse_review(make_review(gpu_pod(count=2), namespace="team")))
    assert decision.outcome is Outcome.AUDITED
    [pod] = handler.converted
    assert pod.converted == ("nvidia.com/gpu",) and pod.request.namespace == "team"


def test_an_api_failure_is_answered_by_the_handler() -> None:
    handler = RecordingHandler()
    unavailable = ApiError("get_namespaces", "timeout", "no answer")
    decision = reviewer(handler, Namespaces(unavailable)).review(parse_review(make_review(gpu_pod(), namespace="a")))
    assert decision.outcome is Outcome.UNCHANGED
    assert handler.failures == ["read namespace a"] and handler.converted == []


def test_every_mode_the_configuration_accepts_has_a_handler() -> None:
    assert set(HANDLERS) == set(Mode)
    assert set(WEBHOOK_SCHEMA["properties"]["mode"]["enum"]) == {mode.value for mode in Mode}


def test_the_mode_is_the_handlers() -> None:
    """The policy's mode picks the handler once; the Reviewer reports the handler's, so the two
    cannot disagree (the policy here is the default, enforce)."""
    assert reviewer(RecordingHandler(), Namespaces()).mode == "audit"
    for mode in Mode:
        policy = WebhookPolicy(mode=mode)
        assert handler_for(policy, TemplateEnsurer(FakeKube())).mode is mode
