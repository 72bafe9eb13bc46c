"""What the platforms around the pod do with device-plugin requests: Knative Serving refuses claims,
KServe's modes, RayJob's submitter pod, tolerations that name a resource, Kueue with KEP-5004."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import errors, findings

from dra_migrate.engine import Severity, convert, default_config, with_emitted_classes, with_strategy


def _gpu() -> dict[str, Any]:
    return {"limits": {"nvidia.com/gpu": 1}}


def _isvc(annotations: dict[str, str] | None = None, **predictor: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "llm"}
    if annotations is not None:
        metadata["annotations"] = annotations
    spec = {"model": {"modelFormat": {"name": "huggingface"}, "resources": _gpu()}, **predictor}
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": metadata,
            "spec": {"predictor": spec}}  # fmt: skip


KNATIVE_SERVICE = {
    "apiVersion": "serving.knative.dev/v1",
    "kind": "Service",
    "metadata": {"name": "kn"},
    "spec": {"template": {"spec": {"containers": [{"image": "x", "resources": _gpu()}]}}},
}


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(KNATIVE_SERVICE, id="knative-service"),
        pytest.param(_isvc({"serving.kserve.io/deploymentMode": "Serverless"}), id="isvc-serverless"),
        pytest.param(_isvc({"autoscaling.knative.dev/target": "1"}), id="isvc-knative-autoscaling"),
    ],
)
def test_what_knative_runs_is_refused_and_left_as_is(obj: dict[str, Any]) -> None:
    result = convert(obj, default_config())
    assert not result.changed and result.object == obj and result.templates == []
    (error,) = errors(result)
    assert error.rule == "serverless-claims"
    assert "RawDeployment" in error.message and "KEP-5004" in error.message


def test_knative_left_to_kep_5004_needs_no_change_and_no_error() -> None:
    config = with_emitted_classes(with_strategy(default_config("1.37"), "extendedResource"))
    result = convert(KNATIVE_SERVICE, config)
    assert not result.changed and errors(result) == []
    assert [s.resource for s in result.extended] == ["nvidia.com/gpu"]


def test_a_raw_deployment_inference_service_converts_with_its_worker_spec() -> None:
    worker = {"containers": [{"name": "worker", "image": "x", "resources": _gpu()}]}
    obj = _isvc({"serving.kserve.io/deploymentMode": "RawDeployment"}, workerSpec=worker)
    result = convert(obj, default_config())
    assert result.changed and errors(result) == []
    assert result.object is not None
    predictor = result.object["spec"]["predictor"]
    assert [c["name"] for c in predictor["resourceClaims"]] == ["model-gpu"]
    assert [c["name"] for c in predictor["workerSpec"]["resourceClaims"]] == ["worker-gpu"]


def test_an_inference_service_without_a_mode_converts_with_a_warning() -> None:
    result = convert(_isvc(), default_config())
    assert result.changed
    assert [f.rule for f in findings(result, severity=Severity.WARNING)] == ["serverless-mode-unknown"]


def test_a_ray_job_submitter_pod_is_converted() -> None:
    submitter = {"spec": {"containers": [{"name": "submit", "image": "ray", "resources": _gpu()}]}}
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
           "spec": {"entrypoint": "python x.py", "submitterPodTemplate": submitter}}  # fmt: skip
    result = convert(job, default_config())
    assert result.changed and result.object is not None
    assert result.object["spec"]["submitterPodTemplate"]["spec"]["resourceClaims"]


def test_a_toleration_key_is_not_an_unknown_kinds_request() -> None:
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
             "spec": {"template": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}}  # fmt: skip
    assert convert(thing, default_config()).findings == []


def test_a_cluster_queue_keeps_limiting_pods_left_to_kep_5004() -> None:
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "q"},
             "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"]}]}}  # fmt: skip
    converted = with_strategy(default_config("1.34"), "claims")
    assert [f.rule for f in convert(queue, converted).findings] == ["quota-not-expressible"]
    kept = with_emitted_classes(default_config("1.36"))
    assert convert(queue, kept).findings == []
