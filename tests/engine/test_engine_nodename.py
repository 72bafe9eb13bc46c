"""`spec.nodeName` -> node selection for pods that use claims (the scheduler must allocate them)."""

from __future__ import annotations

import copy
from typing import Any

import corpus
import pytest
from engine_support import converted, errors, findings, load_documents, pod, schema_errors
from pods import container, gpu

from dra_migrate.engine import Config, Severity, convert, parse_config

HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
AFFINITY = parse_config({"nodeName": {"mode": "nodeAffinity"}})
SCOPE_ALL = parse_config({"nodeName": {"scope": "all"}})


def gpu_pod(**spec: Any) -> dict[str, Any]:
    return pod({"containers": [container("app", gpu(1))], "nodeName": "node-a", **spec})


def terms(result: Any) -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = converted(result)["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    return value


def test_node_name_becomes_a_hostname_node_selector(config: Config) -> None:
    result = convert(gpu_pod(nodeSelector={"gpu": "true"}), config)
    spec = converted(result)["spec"]
    assert "nodeName" not in spec
    assert spec["nodeSelector"] == {"gpu": "true", HOST: "node-a"}
    info = findings(result, "node-name-to-selector", Severity.INFO)
    assert [f.path for f in info] == ["spec.nodeName"]
    assert schema_errors(converted(result)) == ()


def test_matching_hostname_selector_is_fine(config: Config) -> None:
    result = convert(gpu_pod(nodeSelector={HOST: "node-a"}), config)
    assert "nodeName" not in converted(result)["spec"] and not errors(result)


def test_conflicting_hostname_selector_is_an_error_and_node_name_stays(config: Config) -> None:
    result = convert(gpu_pod(nodeSelector={HOST: "node-b"}), config)
    spec = converted(result)["spec"]
    assert spec["nodeName"] == "node-a"
    assert spec["nodeSelector"] == {HOST: "node-b"}
    assert [(f.rule, f.path) for f in errors(result)] == [
        ("node-name-conflict", 'spec.nodeSelector["kubernetes.io/hostname"]')
    ]
    # The device conversion itself still happened.
    assert spec["resourceClaims"][0]["name"] == "app-gpu"


def test_pods_without_claims_keep_node_name_by_default(config: Config) -> None:
    original = pod({"containers": [container("app")], "nodeName": "node-a"})
    result = convert(original, config)
    assert not result.changed and result.object is original


def test_negative_corpus_pod_with_node_name_and_no_devices(config: Config) -> None:
    path = (
        corpus.require("negative")
        / "smarter-project__smarter-device-manager__smarter-device-management-pod-k3s-test-xavier.yaml"
    )
    (loaded,) = load_documents(path)
    doc: dict[str, Any] = loaded
    assert doc["spec"]["nodeName"]
    result = convert(doc, config)
    assert not result.changed and result.object is doc
    # With scope "all" every nodeName goes.
    everything = convert(copy.deepcopy(doc), SCOPE_ALL)
    assert everything.changed
    assert "nodeName" not in converted(everything)["spec"]
    assert converted(everything)["spec"]["nodeSelector"][HOST] == doc["spec"]["nodeName"]
    assert schema_errors(converted(everything)) == ()


def test_pods_that_already_use_claims_lose_node_name(config: Config) -> None:
    original = pod(
        {
            "nodeName": "node-a",
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
        }
    )
    result = convert(original, config)
    assert result.changed and result.templates == []
    assert converted(result)["spec"]["nodeSelector"] == {HOST: "node-a"}


def test_node_affinity_mode_without_affinity() -> None:
    result = convert(gpu_pod(), AFFINITY)
    assert "nodeName" not in converted(result)["spec"]
    assert terms(result) == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]
    assert schema_errors(converted(result)) == ()


def test_node_affinity_mode_ands_into_every_existing_term() -> None:
    affinity = {
        "nodeAffinity": {
            REQUIRED: {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a", "node-b"]}]},
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}}
            ],
        }
    }
    result = convert(gpu_pod(affinity=copy.deepcopy(affinity)), AFFINITY)
    requirement = {"key": "metadata.name", "operator": "In", "values": ["node-a"]}
    assert terms(result) == [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}], "matchFields": [requirement]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a", "node-b"]}, requirement]},
    ]
    preferred = converted(result)["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert schema_errors(converted(result)) == ()


@pytest.mark.parametrize(
    "field",
    [
        {"key": "metadata.name", "operator": "In", "values": ["node-b"]},
        # Regression: the operator was ignored, so NotIn [node-a] got "In [node-a]" ANDed to it.
        {"key": "metadata.name", "operator": "NotIn", "values": ["node-a"]},
    ],
)
def test_node_affinity_that_excludes_the_node_is_an_error(field: dict[str, Any]) -> None:
    affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [field]}]}}}
    result = convert(gpu_pod(affinity=copy.deepcopy(affinity)), AFFINITY)
    spec = converted(result)["spec"]
    assert spec["nodeName"] == "node-a"
    assert spec["affinity"] == affinity
    assert [(f.rule, f.path) for f in errors(result)] == [
        ("node-name-conflict", f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0]")
    ]


def test_node_affinity_not_in_another_node_is_compatible() -> None:
    field = {"key": "metadata.name", "operator": "NotIn", "values": ["node-b"]}
    affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [field]}]}}}
    result = convert(gpu_pod(affinity=affinity), AFFINITY)
    assert not errors(result) and "nodeName" not in converted(result)["spec"]
    assert terms(result)[0]["matchFields"][-1]["values"] == ["node-a"]


@pytest.mark.parametrize(
    "affinity",
    [None, {"nodeAffinity": None}, {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": None}]}}}],
    ids=["affinity-null", "nodeAffinity-null", "matchFields-null"],
)
def test_node_affinity_mode_with_null_levels(affinity: Any) -> None:
    """Regression: a null level made convert() raise AttributeError."""
    result = convert(gpu_pod(affinity=affinity), AFFINITY)
    assert not errors(result) and "nodeName" not in converted(result)["spec"]
    assert terms(result)[-1]["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]


def test_scope_all_with_node_affinity_on_a_workload() -> None:
    cfg = parse_config({"nodeName": {"mode": "nodeAffinity", "scope": "all"}})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"nodeName": "n1", "containers": [container("c")]},
            },
        },
    }
    result = convert(deployment, cfg)
    template_spec = converted(result)["spec"]["template"]["spec"]
    assert "nodeName" not in template_spec
    assert template_spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        "n1"
    ]
    assert [f.path for f in findings(result, "node-name-to-selector")] == ["spec.template.spec.nodeName"]
