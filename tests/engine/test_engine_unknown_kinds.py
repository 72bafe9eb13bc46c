"""Kinds the engine does not know are not silent when they name a mapped resource; KServe's
LLMInferenceServiceConfig is a known kind."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine import Config, Severity, convert, parse_config


def _containers(count: int) -> list[dict[str, Any]]:
    return [{"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": count}}}]


HYPERPOD = {
    "apiVersion": "sagemaker.amazonaws.com/v1",
    "kind": "HyperPodPyTorchJob",
    "metadata": {"name": "train", "labels": {"nvidia.com/gpu": "yes"}},
    "spec": {"replicaSpecs": [{"name": "pods", "template": {"spec": {"containers": _containers(8)}}}]},
}
SPARK = {
    "apiVersion": "sparkoperator.k8s.io/v1beta2",
    "kind": "SparkApplication",
    "metadata": {"name": "etl"},
    "spec": {"driver": {"gpu": {"name": "nvidia.com/gpu", "quantity": 1}}, "executor": {"cores": 4}},
}


def test_unknown_kinds_naming_mapped_resources_are_warnings_with_kind_and_path(config: Config) -> None:
    hyperpod = convert(HYPERPOD, config)
    assert not hyperpod.changed
    [finding] = hyperpod.findings
    assert (finding.rule, finding.severity) == ("unknown-kind", Severity.WARNING)
    assert finding.path == 'spec.replicaSpecs[0].template.spec.containers[0].resources.limits["nvidia.com/gpu"]'
    assert "HyperPodPyTorchJob" in finding.message and "workloads:" in finding.message
    [spark] = convert(SPARK, config).findings
    assert spark.path == "spec.driver.gpu.name" and "SparkApplication" in spark.message


def test_kinds_without_pod_resources_and_unmapped_names_stay_quiet(config: Config) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"a": "b"}}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"r": "nvidia.com/gpu"}}
    other = {**HYPERPOD, "spec": {"limits": {"example.org/widget": 1, "cpu": 2}}}
    for obj in (service, configmap, other):
        assert convert(obj, config).findings == [], obj["kind"]


def test_configured_workloads_are_converted_instead(config: Config) -> None:
    taught = parse_config(
        {
            "workloads": [
                {
                    "apiGroup": "sagemaker.amazonaws.com",
                    "kind": "HyperPodPyTorchJob",
                    "podSpecPaths": ["spec.replicaSpecs[*].template.spec"],
                }
            ]
        }
    )
    result = convert(HYPERPOD, taught)
    assert result.changed and not [f for f in result.findings if f.rule == "unknown-kind"]


def test_llm_inference_service_config_is_converted(config: Config) -> None:
    obj = {
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "LLMInferenceServiceConfig",
        "metadata": {"name": "base", "namespace": "ml"},
        "spec": {"template": {"containers": _containers(2)}, "worker": {"containers": _containers(2)}},
    }
    result = convert(obj, config)
    assert result.changed and result.object is not None
    for part in ("template", "worker"):
        assert result.object["spec"][part]["resourceClaims"]
        assert "limits" not in result.object["spec"][part]["containers"][0]["resources"]


def test_an_unknown_kind_is_one_warning_naming_every_field(config: Config) -> None:
    """Three mapped fields of one object are one thing to teach the engine: one warning, not three."""
    pods = [{"name": n, "template": {"spec": {"containers": _containers(2)}}} for n in ("a", "b")]
    obj = {**HYPERPOD, "spec": {"replicaSpecs": pods, "gpu": {"name": "nvidia.com/gpu"}}}
    [finding] = [f for f in convert(obj, config).findings if f.rule == "unknown-kind"]
    assert finding.path == 'spec.replicaSpecs[0].template.spec.containers[0].resources.limits["nvidia.com/gpu"]'
    for field in ("spec.replicaSpecs[1].template", "spec.gpu.name"):
        assert field in finding.message, finding.message
