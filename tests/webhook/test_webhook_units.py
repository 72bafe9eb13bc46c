"""The pure parts on their own: envelope, messages, templates, DeviceClass index, review edge cases."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from admission import make_review
from fakekube import FakeKube, synced_watch
from pods import gpu_pod
from polling import wait_until

from dra_migrate.engine import (
    DeviceRequestSpec,
    Finding,
    Severity,
    Target,
    Unconvertible,
    convert,
    default_config,
    parse_config,
)
from dra_migrate.webhook import messages, review
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.cluster import ClusterCaches, target_from_version
from dra_migrate.webhook.envelope import AdmissionResponse, InvalidReviewError, parse_review, render_review
from dra_migrate.webhook.extended import ExtendedResourceIndex, serving_record, without_resources
from dra_migrate.webhook.resource_api import ApiError
from dra_migrate.webhook.responses import Outcome
from dra_migrate.webhook.review import Reviewer
from dra_migrate.webhook.templates import (
    KeyedLocks,
    TemplateConflictError,
    TemplateEnsurer,
    TemplateLimitError,
    TemplateRecord,
    candidate_names,
    content_key,
)
from dra_migrate.webhook.watchcache import ClusterCopy


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


@pytest.mark.parametrize("namespace", ["0?", "team/a", "Team", "a" * 64, "-a", "a-", "a\n", "../x"])
def test_a_namespace_that_is_no_namespace_name_is_refused(namespace: str) -> None:
    """Only a direct POST names one (kube-apiserver sends existing namespaces); it ended up in the
    path of the server's API calls (a quota list for `0?` failed with a 500)."""
    with pytest.raises(InvalidReviewError, match=r"request\.namespace must be a namespace name"):
        _request(gpu_pod(), namespace=namespace)
    assert _request(gpu_pod(), namespace="a" * 63).namespace == "a" * 63


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


def _budget() -> Budget:
    return Budget(1.0)


def _created(ensurer: TemplateEnsurer, templates: list[dict[str, Any]], *, dry_run: bool = False) -> list[str]:
    """The names `ensure` created for one review."""
    return ensurer.ensure(templates, dry_run=dry_run, budget=_budget()).created


def test_ensurer_without_a_copy_asks_the_api_each_time() -> None:
    fake = FakeKube()
    ensurer = TemplateEnsurer(fake)
    # A dry run checks as the create does (the count, then the create itself as a dry run), stores nothing.
    assert _created(ensurer, [_template()], dry_run=True) == []
    assert fake.templates == {} and fake.calls_to("POST", "?dryRun=All") == 1
    assert _created(ensurer, [_template()]) == [_template()["metadata"]["name"]]
    assert _created(ensurer, [_template()]) == []
    # One read per review: nothing was created by this worker between a creation's read and its turn.
    assert fake.calls_to("GET", "/resourceclaimtemplates/") == 3 and fake.calls_to("POST") == 2
    assert fake.calls_to("GET", "resourceclaimtemplates?") == 2  # counting ours before creating one


class _CreatedDuringTheRead(FakeKube):
    """An API whose first read of a template answers "not found" while another review of the same
    worker creates it (the read's answer was on its way when the other creation finished)."""

    def __init__(self) -> None:
        super().__init__()
        self.during_first_read: Callable[[], object] | None = None

    def get(self, resource: Any, namespace: str | None, name: str, timeout: float) -> dict[str, Any] | None:
        answer = super().get(resource, namespace, name, timeout)
        other, self.during_first_read = self.during_first_read, None
        if other is not None:
            other()
        return answer


def test_a_template_created_while_a_review_read_is_not_created_again() -> None:
    fake = _CreatedDuringTheRead()
    ensurer = TemplateEnsurer(fake)
    name = _template()["metadata"]["name"]
    fake.during_first_read = lambda: _created(ensurer, [_template()])
    assert _created(ensurer, [_template()]) == []  # the other review created it
    assert list(fake.templates) == [("team-a", name)]
    assert fake.calls_to("POST") == 1  # looked again before creating: no second POST answered 409


def test_ensurer_with_a_current_copy_makes_no_call() -> None:
    fake = FakeKube()
    fake.add_template(_template(), "team-a")
    caches = synced_watch(fake)
    try:
        before = len(fake.calls)
        ensurer = TemplateEnsurer(fake, lambda: caches.templates)
        for _ in range(100):
            assert _created(ensurer, [_template()]) == []
        assert len(fake.calls) == before
    finally:
        caches.stop()
        fake.close()


def test_deleted_or_replaced_template_is_never_trusted() -> None:
    """A template deleted, or replaced with another spec, is seen by the next review (watch, not a TTL)."""
    fake = FakeKube()
    caches = synced_watch(fake)
    try:
        ensurer = TemplateEnsurer(fake, lambda: caches.templates)
        name = _template()["metadata"]["name"]
        assert _created(ensurer, [_template()]) == [name]
        templates = caches.templates
        assert templates is not None
        wait_until(lambda: templates.get("team-a", name) is not None)
        fake.delete("resourceclaimtemplates", "team-a", name)
        wait_until(lambda: templates.get("team-a", name) is None)
        assert _created(ensurer, [_template()]) == [name]  # created again
        replaced = _template()
        replaced["spec"]["spec"]["devices"]["requests"][0]["exactly"] = {
            "deviceClassName": "gpu.nvidia.com",
            "allocationMode": "All",
        }
        fake.delete("resourceclaimtemplates", "team-a", name)
        fake.add_template(replaced, "team-a")
        replaced_key = content_key(replaced)
        wait_until(lambda: (record := templates.get("team-a", name)) is not None and record.content_key == replaced_key)
        # The replaced one is left alone and the pod gets a template of its own under the next name.
        ensured = ensurer.ensure([_template()], dry_run=False, budget=_budget())
        assert ensured.created == [f"{name}-2"] and ensured.renamed == {name: f"{name}-2"}
    finally:
        caches.stop()
        fake.close()


def test_names_found_taken_without_a_copy_are_remembered_briefly() -> None:
    fake, clock = FakeKube(), Clock()
    conflicting = _template()
    name = conflicting["metadata"]["name"]
    conflicting["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    fake.add_template(conflicting, "team-a")
    ensurer = TemplateEnsurer(fake, clock=clock)
    assert _created(ensurer, [_template()]) == [f"{name}-2"]
    for _ in range(1000):
        assert ensurer.ensure([_template()], dry_run=False, budget=_budget()).renamed == {name: f"{name}-2"}
    reads = [path for method, path in fake.calls if method == "GET" and path.endswith(f"/{name}")]
    assert len(reads) == 1  # the taken name, read once
    clock.now += 6
    ensurer.ensure([_template()], dry_run=False, budget=_budget())
    assert sum(1 for method, path in fake.calls if method == "GET" and path.endswith(f"/{name}")) == 2


def test_every_name_taken_is_refused() -> None:
    fake = FakeKube()
    for taken in candidate_names(_template()["metadata"]["name"]):
        other = _template(count=5)
        other["metadata"]["name"] = taken
        fake.add_template(other, "team-a")
    with pytest.raises(TemplateConflictError, match="different spec or claim metadata"):
        _created(TemplateEnsurer(fake), [_template()])
    assert fake.calls_to("POST") == 0


def _templates_of(caches: ClusterCaches) -> Callable[[], ClusterCopy[TemplateRecord] | None]:
    return lambda: caches.templates


def test_templates_per_namespace_are_bounded() -> None:
    fake = FakeKube()
    for synced in (False, True):
        caches = synced_watch(fake) if synced else ClusterCaches()
        ensurer = TemplateEnsurer(fake, _templates_of(caches), max_per_namespace=3)
        namespace = f"bounded-{synced}"
        for count in (1, 2, 3):
            _created(ensurer, [_template(namespace, count)])
        with pytest.raises(TemplateLimitError, match=f"namespace {namespace} already has 3"):
            _created(ensurer, [_template(namespace, 4)])
        _created(ensurer, [_template(namespace, 2)])  # an existing one is fine
        _created(ensurer, [_template("elsewhere-" + namespace, 4)])
        caches.stop()
    fake.close()


@pytest.mark.parametrize("synced", [False, True])
def test_pods_sharing_a_new_template_at_the_limit_are_all_admitted(synced: bool) -> None:
    """One below the limit, reviews of one Deployment's pods need the same new template at once:
    one creates it, the others find it once their turn comes instead of counting it as one too many."""
    fake = FakeKube()
    caches = synced_watch(fake) if synced else ClusterCaches()
    ensurer = TemplateEnsurer(fake, _templates_of(caches), max_per_namespace=3)
    for count in (1, 2):
        _created(ensurer, [_template("deploy", count)])
    fake.delay = 0.05  # every API call is slow: the reviews overlap
    results: list[list[str] | BaseException] = []

    def review() -> None:
        try:
            results.append(_created(ensurer, [_template("deploy", 3)]))
        except BaseException as exc:
            results.append(exc)

    threads = [threading.Thread(target=review) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(map(repr, results)) == sorted([repr([_template("deploy", 3)["metadata"]["name"]]), *["[]"] * 3])
    assert fake.calls_to("POST") == 3
    caches.stop()
    fake.close()


def test_creation_locks_exist_only_while_used_and_keys_do_not_wait_for_each_other() -> None:
    locks = KeyedLocks()
    with locks.holding("a", timeout=1) as first, locks.holding("b", timeout=0.01) as other:
        assert first and other and len(locks) == 2
        with locks.holding("a", timeout=0.01) as again:
            assert not again  # held above: a waiter gives up after its timeout
    assert len(locks) == 0


def test_ensurer_reports_api_errors() -> None:
    fake = FakeKube(fail_status=503)
    errors: list[tuple[str, str]] = []
    ensurer = TemplateEnsurer(fake, on_api_error=lambda o, r: errors.append((o, r)))
    with pytest.raises(ApiError, match="HTTP 503"):
        _created(ensurer, [_template()])
    assert errors == [("get_resourceclaimtemplates", "http_503")]


@pytest.mark.parametrize(("target", "version"), [("1.32", "v1beta1"), ("1.33", "v1beta2"), ("1.35", "v1")])
def test_templates_are_created_in_the_target_version(target: str, version: str) -> None:
    fake = FakeKube()
    config = parse_config({"targetVersion": target})
    response = Reviewer.for_api(config, fake).review(_request(gpu_pod(), namespace="ns"))
    assert response.outcome is Outcome.PATCHED
    ((namespace, _), stored), *_ = fake.templates.items()
    assert namespace == "ns" and stored["apiVersion"] == f"resource.k8s.io/{version}"
    assert fake.calls[-1][1] == f"/apis/resource.k8s.io/{version}/namespaces/ns/resourceclaimtemplates"
    # A second pod verifies the stored copy (server defaults included) without conflict.
    fresh = Reviewer.for_api(config, fake)
    assert fresh.review(_request(gpu_pod(name="b"), namespace="ns")).outcome is Outcome.PATCHED


# --- DeviceClasses with extendedResourceName ---


def test_only_classes_that_serve_a_name_are_kept() -> None:
    served = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "g", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"}},
        "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression": "true"}}]},
    }
    assert serving_record(served) == {
        "metadata": {"name": "g", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression": "true"}}]},
    }
    assert serving_record({"metadata": {"name": "plain"}, "spec": {}}) is None
    assert serving_record({"metadata": {"name": "odd"}, "spec": []}) is None


@pytest.mark.parametrize(
    ("answer", "release"),
    [
        ({"major": "1", "minor": "34", "gitVersion": "v1.34.4"}, "1.34"),
        ({"major": "1", "minor": "35+", "gitVersion": "v1.35.2-eks-4a3d6d8"}, "1.35"),
        ({"gitVersion": "v1.37.2-gke.100"}, "1.37"),
    ],
)
def test_target_from_the_servers_version(answer: dict[str, str], release: str) -> None:
    assert target_from_version(answer) == Target.parse(release)


def test_without_resources_carves_names_out_of_patterns() -> None:
    config = without_resources(default_config(), {"nvidia.com/mig-1g.5gb": ("mig",), "nvidia.com/gpu": ("gpu",)})
    assert isinstance(config.mappings.resolve("nvidia.com/mig-1g.5gb"), Unconvertible)
    assert isinstance(config.mappings.resolve("nvidia.com/mig-2g.10gb"), DeviceRequestSpec)
    assert isinstance(config.mappings.resolve("nvidia.com/gpu"), Unconvertible)
    assert isinstance(default_config().mappings.resolve("nvidia.com/gpu"), DeviceRequestSpec)


def test_index_follows_the_watched_classes() -> None:
    fake = FakeKube()
    fake.add_device_class("g", extended_resource_name="nvidia.com/gpu")
    fake.add_device_class("plain")
    caches = synced_watch(fake)
    try:
        index = ExtendedResourceIndex(lambda: caches.device_classes)
        assert index.current() == {"nvidia.com/gpu": ("g",)} and index.extended_names() == {"g": "nvidia.com/gpu"}
        fake.add_device_class("h", extended_resource_name="nvidia.com/gpu")
        wait_until(lambda: index.current() == {"nvidia.com/gpu": ("g", "h")})
    finally:
        caches.stop()
        fake.close()
    assert ExtendedResourceIndex(lambda: None).current() == {}


# --- review edge cases ---


def test_engine_failure_is_a_clear_denial(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(obj: Any, config: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(review, "convert", broken)
    decision = Reviewer.for_api(default_config(), FakeKube()).review(_request(gpu_pod()))
    assert decision.outcome is Outcome.DENIED_ERROR
    assert decision.response.allowed is False and decision.response.status_code == 500
    assert "RuntimeError: boom" in (decision.response.message or "")


def test_unchanged_pod_keeps_engine_warnings() -> None:
    pod = gpu_pod(resource="nvidia.com/gpu.shared")
    decision = Reviewer.for_api(default_config(), FakeKube()).review(_request(pod))
    assert decision.outcome is Outcome.UNCHANGED and decision.response.patch is None
    assert any("time-slicing" in w for w in decision.response.warnings)
