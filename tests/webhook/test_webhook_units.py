"""The pure parts on their own: envelope, messages, templates, DeviceClass index, review edge cases."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fakekube import FakeKube
from webhook_support import gpu_pod, make_review

from dra_migrate.engine import (
    DeviceRequestSpec,
    Finding,
    Severity,
    Unconvertible,
    convert,
    default_config,
    parse_config,
)
from dra_migrate.webhook import messages, review
from dra_migrate.webhook.envelope import AdmissionResponse, InvalidReviewError, parse_review, render_review
from dra_migrate.webhook.extended import ExtendedResourceIndex, classes_by_resource, without_resources
from dra_migrate.webhook.resource_api import ApiError
from dra_migrate.webhook.review import Outcome, Reviewer
from dra_migrate.webhook.templates import Budget, RememberedTemplates, TemplateConflictError, TemplateEnsurer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _request(pod: dict[str, Any], **kwargs: Any) -> Any:
    return parse_review(make_review(pod, **kwargs))


# --- envelope ---


def test_render_review_echoes_version_and_encodes_patch() -> None:
    patch = [{"op": "remove", "path": "/spec/nodeName"}]
    out = render_review(
        "admission.k8s.io/v1beta1",
        "abc",
        AdmissionResponse(True, patch=patch, warnings=("w",), audit_annotations={"k": "v"}),
    )
    assert out["apiVersion"] == "admission.k8s.io/v1beta1" and out["kind"] == "AdmissionReview"
    response = out["response"]
    assert response["uid"] == "abc" and response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == patch
    denied = render_review("admission.k8s.io/v1", "x", AdmissionResponse(False, status_code=409, message="m"))
    assert denied["response"] == {"uid": "x", "allowed": False, "status": {"code": 409, "message": "m"}}


def test_parse_review_fields() -> None:
    parsed = _request(gpu_pod(), namespace="ns", dry_run=True)
    assert (parsed.operation, parsed.namespace, parsed.dry_run, parsed.is_pod) == ("CREATE", "ns", True, True)
    with pytest.raises(InvalidReviewError, match=r"request\.namespace"):
        _request(gpu_pod(), namespace="")


# --- messages ---


def test_one_line_and_limits() -> None:
    assert messages.one_line("a\nb\tc\x00 d", 100) == "a b c d"
    cut = messages.one_line("x" * 300, 256)
    assert len(cut) == 256 and cut.endswith("...")
    assert messages.one_line("caf\u00e9 \u2192 ok", 100) == "caf ok"
    findings = [Finding(Severity.INFO, "device-plugin-to-claim", "p", f"change {i}") for i in range(15)]
    lines = messages.warnings_for(findings)
    assert len(lines) == messages.MAX_WARNINGS and lines[-1].endswith("6 more messages in the audit log")
    with pytest.raises(ValueError, match="invalid audit annotation key"):
        messages.audit_annotations({"pods.dra-migrate.io/x": "v"})
    assert messages.audit_annotations({"a": "", "b": "v"}) == {"b": "v"}


def test_problems_come_after_changes() -> None:
    findings = [Finding(Severity.ERROR, "schema", "p", "bad"), Finding(Severity.INFO, "api-version", "p", "done")]
    assert messages.warnings_for(findings) == ("dra-migrate: done", "dra-migrate error: bad")


# --- templates ---


def _template(namespace: str = "team-a", count: int = 2) -> dict[str, Any]:
    template = convert(gpu_pod(count=count), default_config()).templates[0]
    template["metadata"]["namespace"] = namespace
    return template


def test_budget_is_shared_by_the_calls_of_one_review() -> None:
    clock = Clock()
    budget = Budget(2.0, clock=clock)
    assert budget.timeout("get") == 2.0
    clock.now += 3.0
    assert budget.timeout("create") == pytest.approx(1.0)
    clock.now += 1.0
    with pytest.raises(ApiError, match="used up"):
        budget.timeout("get")


def test_remembered_templates_expire_and_are_bounded() -> None:
    clock = Clock()
    known = RememberedTemplates(10.0, max_entries=2, clock=clock)
    known.add(("v1", "a", "x"))
    assert ("v1", "a", "x") in known
    clock.now += 11
    assert ("v1", "a", "x") not in known
    for name in "pqr":
        known.add(("v1", "a", name))
    assert ("v1", "a", "p") not in known and ("v1", "a", "r") in known
    off = RememberedTemplates(0.0)
    off.add(("v1", "a", "x"))
    assert ("v1", "a", "x") not in off


def test_ensurer_dry_run_creates_nothing_and_remembers_nothing() -> None:
    fake = FakeKube()
    ensurer = TemplateEnsurer(fake, timeout=1.0, cache_seconds=60)
    assert ensurer.ensure([_template()], create=False) == []
    assert fake.templates == {} and fake.calls_to("GET") == 1
    assert ensurer.ensure([_template()], create=True) == [_template()["metadata"]["name"]]
    assert ensurer.ensure([_template()], create=True) == []
    assert fake.calls_to("GET") == 2 and fake.calls_to("POST") == 1


def test_ensurer_conflict_and_cache_expiry() -> None:
    fake, clock = FakeKube(), Clock()
    created: list[int] = []
    ensurer = TemplateEnsurer(fake, timeout=1.0, cache_seconds=5, clock=clock, on_created=lambda: created.append(1))
    ensurer.ensure([_template()], create=True)
    # Someone replaces it by hand with another spec: noticed once the memory expires.
    stored = fake.templates[("team-a", _template()["metadata"]["name"])]
    stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    ensurer.ensure([_template()], create=True)
    clock.now += 6
    with pytest.raises(TemplateConflictError, match='"team-a/gpu-nvidia-com-2-'):
        ensurer.ensure([_template()], create=True)
    assert created == [1]


def test_ensurer_reports_api_errors() -> None:
    fake = FakeKube(fail_status=503)
    errors: list[tuple[str, str]] = []
    ensurer = TemplateEnsurer(fake, timeout=1.0, cache_seconds=5, on_api_error=lambda o, r: errors.append((o, r)))
    with pytest.raises(ApiError, match="HTTP 503"):
        ensurer.ensure([_template()], create=True)
    assert errors == [("get_template", "http_503")]


@pytest.mark.parametrize(("target", "version"), [("1.32", "v1beta1"), ("1.33", "v1beta2"), ("1.35", "v1")])
def test_templates_are_created_in_the_target_version(target: str, version: str) -> None:
    fake = FakeKube()
    config = parse_config({"targetVersion": target})
    response = Reviewer(config, TemplateEnsurer(fake, timeout=1.0, cache_seconds=5)).review(
        _request(gpu_pod(), namespace="ns")
    )
    assert response.outcome is Outcome.PATCHED
    ((namespace, _), stored), *_ = fake.templates.items()
    assert namespace == "ns" and stored["apiVersion"] == f"resource.k8s.io/{version}"
    assert fake.calls[-1][1] == f"/apis/resource.k8s.io/{version}/namespaces/ns/resourceclaimtemplates"
    # A second pod verifies the stored copy (server defaults included) without conflict.
    fresh = Reviewer(config, TemplateEnsurer(fake, timeout=1.0, cache_seconds=5))
    assert fresh.review(_request(gpu_pod(name="b"), namespace="ns")).outcome is Outcome.PATCHED


# --- DeviceClasses with extendedResourceName ---


def test_classes_by_resource() -> None:
    classes = [
        {"metadata": {"name": "b.example.com"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}},
        {"metadata": {"name": "a.example.com"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}},
        {"metadata": {"name": "plain"}, "spec": {}},
        {"metadata": {}, "spec": {"extendedResourceName": "x/y"}},
    ]
    assert classes_by_resource(classes) == {"nvidia.com/gpu": ("a.example.com", "b.example.com")}


def test_without_resources_carves_names_out_of_patterns() -> None:
    config = without_resources(default_config(), {"nvidia.com/mig-1g.5gb": ("mig",), "nvidia.com/gpu": ("gpu",)})
    assert isinstance(config.mappings.resolve("nvidia.com/mig-1g.5gb"), Unconvertible)
    assert isinstance(config.mappings.resolve("nvidia.com/mig-2g.10gb"), DeviceRequestSpec)
    assert isinstance(config.mappings.resolve("nvidia.com/gpu"), Unconvertible)
    assert isinstance(default_config().mappings.resolve("nvidia.com/gpu"), DeviceRequestSpec)


def test_index_keeps_last_good_list_and_never_raises_to_callers() -> None:
    answers: list[Any] = [
        [{"metadata": {"name": "g"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}}],
        ApiError("list_deviceclasses", "timeout", "slow"),
    ]
    errors: list[str] = []

    def lister(timeout: float) -> list[dict[str, Any]]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    index = ExtendedResourceIndex(lister, refresh_seconds=60, timeout=1, on_api_error=lambda o, r: errors.append(r))
    index.refresh_once()
    with pytest.raises(ApiError):
        index.refresh_once()
    assert index.current() == {"nvidia.com/gpu": ("g",)} and errors == ["timeout"]
    assert ExtendedResourceIndex(None, refresh_seconds=1, timeout=1).current() == {}


# --- review edge cases ---


def test_engine_failure_is_a_clear_denial(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(obj: Any, config: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(review, "convert", broken)
    decision = Reviewer(default_config(), TemplateEnsurer(FakeKube(), timeout=1, cache_seconds=1)).review(
        _request(gpu_pod())
    )
    assert decision.outcome is Outcome.DENIED_ERROR
    assert decision.response.allowed is False and decision.response.status_code == 500
    assert "RuntimeError: boom" in (decision.response.message or "")


def test_unchanged_pod_keeps_engine_warnings() -> None:
    pod = gpu_pod(resource="nvidia.com/gpu.shared")
    decision = Reviewer(default_config(), TemplateEnsurer(FakeKube(), timeout=1, cache_seconds=1)).review(_request(pod))
    assert decision.outcome is Outcome.UNCHANGED and decision.response.patch is None
    assert any("time-slicing" in w for w in decision.response.warnings)
