"""What the platforms around the pod do with device-plugin requests: Knative Serving refuses claims,
KServe's modes, RayJob's submitter pod, tolerations that name a resource, Kueue with KEP-5004."""

from __future__ import annotations

import copy
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


def test_a_scoped_quota_gets_no_key_it_could_not_enforce_and_says_so() -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In",
                                                              "values": ["high"]}]},
                      "hard": {"requests.nvidia.com/gpu": 1}}}  # fmt: skip
    result = convert(quota, default_config())
    assert not result.changed
    (warning,) = findings(result, severity=Severity.WARNING)
    assert warning.rule == "quota-scoped" and "gpu.nvidia.com.deviceclass.resource.k8s.io/devices" in warning.message


def test_a_limit_range_on_a_converted_name_is_warned() -> None:
    limit_range = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
                   "spec": {"limits": [{"type": "Container", "default": {"nvidia.com/gpu": 1},
                                        "max": {"nvidia.com/gpu": 4, "cpu": 8}}]}}  # fmt: skip
    result = convert(limit_range, default_config())
    assert not result.changed
    assert [(f.rule, f.path) for f in result.findings] == [
        ("limit-range-device", 'spec.limits[0].default["nvidia.com/gpu"]'),
        ("limit-range-device", 'spec.limits[0].max["nvidia.com/gpu"]'),
    ]
    assert "both by the device plugin and DRA" in result.findings[0].message


@pytest.mark.parametrize("where", ["pod", "volcano-job"])
def test_another_scheduler_is_asked_whether_it_allocates_claims(where: str) -> None:
    pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": _gpu()}]}
    if where == "pod":
        spec = {**pod_spec, "schedulerName": "kai"}
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    else:
        task = {"name": "t", "replicas": 1, "template": {"spec": pod_spec}}
        obj = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
               "spec": {"schedulerName": "volcano", "tasks": [task]}}  # fmt: skip
    result = convert(obj, default_config())
    assert result.changed
    assert [f.rule for f in findings(result, severity=Severity.WARNING)] == ["custom-scheduler"]


def test_hami_selection_annotations_become_cel_selectors_on_the_driver_attributes() -> None:
    annotations = {
        "nvidia.com/use-gputype": "A100, H100",
        "nvidia.com/nouse-gpuuuid": "GPU-1,GPU-2",
        "hami.io/node-scheduler-policy": "binpack",
    }
    template: dict[str, Any] = {"metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": _gpu()}]}}  # fmt: skip
    deployment: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                  "spec": {"selector": {}, "template": template}}  # fmt: skip
    result = convert(deployment, default_config())
    (claim_template,) = result.templates
    request = claim_template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert [s["cel"]["expression"] for s in request["selectors"]] == [
        'device.attributes["gpu.nvidia.com"].productName.contains("A100") || '
        'device.attributes["gpu.nvidia.com"].productName.contains("H100")',
        '!(device.attributes["gpu.nvidia.com"].uuid in ["GPU-1", "GPU-2"])',
    ]
    assert [f.rule for f in findings(result, severity=Severity.WARNING)] == ["hami-policy"]
    assert {f.rule for f in findings(result, severity=Severity.INFO)} >= {"hami-selector"}
    plain_deployment = copy.deepcopy(deployment)
    del plain_deployment["spec"]["template"]["metadata"]
    plain = convert(plain_deployment, default_config())
    assert plain.templates[0]["metadata"]["name"] != claim_template["metadata"]["name"]
