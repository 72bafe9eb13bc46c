"""Property: for generated small GPU pods, the app's patch reproduces the engine and answers are well formed.

In-process through Flask's test client (fast), with the in-memory fake API.
"""

from __future__ import annotations

import re
from typing import Any

import jsonpatch
from admission import make_review
from fakekube import FakeKube
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webhook_support import decoded_patch

from dra_migrate.engine import at_admission, convert, default_config
from dra_migrate.webhook.app import create_app
from dra_migrate.webhook.review import Reviewer

CONFIG = default_config()
GPU = "nvidia.com/gpu"
ANNOTATION_KEY = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")

count = st.integers(min_value=0, max_value=4).flatmap(lambda n: st.sampled_from([n, str(n)]))


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    shape = draw(st.sampled_from(["none", "limits", "requests", "both", "both-differ", "cpu-only"]))
    if shape == "none":
        return out
    if shape == "cpu-only":
        return {"limits": {"cpu": "1"}}
    value = draw(count)
    if shape in ("limits", "both", "both-differ"):
        out["limits"] = {GPU: value, "memory": "1Gi"}
    if shape in ("requests", "both"):
        out["requests"] = {GPU: value}
    if shape == "both-differ":
        out["requests"] = {GPU: draw(count)}
    return out


@st.composite
def containers(draw: st.DrawFn, prefix: str, min_size: int, max_size: int) -> list[dict[str, Any]]:
    number = draw(st.integers(min_value=min_size, max_value=max_size))
    out = []
    for index in range(number):
        container: dict[str, Any] = {"name": f"{prefix}-{index}", "image": "busybox"}
        limits = draw(resources())
        if limits:
            container["resources"] = limits
        if prefix == "init" and draw(st.booleans()):
            container["restartPolicy"] = "Always"  # sidecar
        out.append(container)
    return out


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(containers("app", 1, 3))}
    init = draw(containers("init", 0, 2))
    if init:
        spec["initContainers"] = init
    if draw(st.booleans()):
        spec["nodeName"] = "node-1"
    metadata: dict[str, Any] = {"generateName": "job-"} if draw(st.booleans()) else {"name": "p", "namespace": "team-a"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _client() -> FlaskClient:
    fake = FakeKube()
    reviewer = Reviewer.for_api(CONFIG, fake)
    return create_app(reviewer).test_client()


CLIENT = _client()


def _well_formed(response: dict[str, Any], uid: str) -> None:
    assert response["uid"] == uid
    assert response["allowed"] is True
    for warning in response.get("warnings", []):
        assert isinstance(warning, str) and 0 < len(warning) <= 256
        assert warning.isprintable() and warning.isascii()
    for key, value in response.get("auditAnnotations", {}).items():
        assert ANNOTATION_KEY.fullmatch(key) and isinstance(value, str) and len(value) <= 1024


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod=pods(), beta=st.booleans(), dry_run=st.booleans())
def test_patch_reproduces_engine_output(pod: dict[str, Any], beta: bool, dry_run: bool) -> None:
    review = make_review(
        pod, api_version="admission.k8s.io/v1beta1" if beta else "admission.k8s.io/v1", dry_run=dry_run
    )
    answer = CLIENT.post("/mutate", json=review)
    assert answer.status_code == 200
    body = answer.get_json()
    assert body["apiVersion"] == review["apiVersion"] and body["kind"] == "AdmissionReview"
    response = body["response"]
    _well_formed(response, review["request"]["uid"])

    expected = convert(pod, at_admission(CONFIG))
    patch = decoded_patch(response)
    if expected.changed:
        assert patch is not None
        converted = jsonpatch.apply_patch(pod, patch)
        assert converted == expected.object
        # Reinvocation or a retried create of the converted pod changes nothing more.
        again = CLIENT.post("/mutate", json=make_review(converted)).get_json()["response"]
        assert "patch" not in again
    else:
        assert patch is None
