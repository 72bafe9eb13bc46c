"""Pod DRA fields of <= 1.30 (`resourceClaims[].source`) and invalid constructs seen in blog posts."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_support import converted, error_keys, errors, findings, pod, schema_errors
from pods import container, gpu

from dra_migrate.engine import Config, Severity, convert


def claim_user(*names: str) -> dict[str, Any]:
    return {"name": "c", "image": "x", "resources": {"claims": [{"name": n} for n in names]}}


@pytest.mark.parametrize("field", ["resourceClaimTemplateName", "resourceClaimName"])
def test_legacy_source_is_flattened(config: Config, field: str) -> None:
    original = pod(
        {"resourceClaims": [{"name": "gpu", "source": {field: "gpu-tmpl"}}], "containers": [claim_user("gpu")]}
    )
    result = convert(original, config)
    assert result.changed and not errors(result)
    assert converted(result)["spec"]["resourceClaims"] == [{"name": "gpu", field: "gpu-tmpl"}]
    info = findings(result, "legacy-claim-source", Severity.INFO)
    assert [f.path for f in info] == ["spec.resourceClaims[0].source"]
    assert schema_errors(converted(result)) == ()
    assert schema_errors(original) != ()  # `source` is not a field any more


@pytest.mark.parametrize(
    "claim",
    [
        {"name": "gpu", "source": {"resourceClaimName": "a", "resourceClaimTemplateName": "b"}},
        {"name": "gpu", "source": {}},
        {"name": "gpu", "source": None},
        {"name": "gpu", "source": {"resourceClaimName": "a"}, "resourceClaimTemplateName": "b"},
    ],
    ids=["both", "empty", "null", "source-and-flat"],
)
def test_invalid_legacy_source_is_an_error_and_left(config: Config, claim: dict[str, Any]) -> None:
    original = pod({"resourceClaims": [copy.deepcopy(claim)], "containers": [claim_user("gpu")]})
    result = convert(original, config)
    assert not result.changed and result.object == original
    assert error_keys(result) == {("legacy-claim-source-invalid", "spec.resourceClaims[0].source")}


def test_legacy_source_and_device_plugin_in_one_pod(config: Config) -> None:
    user = claim_user("old")
    user["resources"]["limits"] = gpu(1)
    original = pod(
        {"resourceClaims": [{"name": "old", "source": {"resourceClaimName": "shared"}}], "containers": [user]}
    )
    result = convert(original, config)
    spec = converted(result)["spec"]
    assert spec["resourceClaims"][0] == {"name": "old", "resourceClaimName": "shared"}
    assert spec["resourceClaims"][1]["name"] == "c-gpu"
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "old"}, {"name": "c-gpu"}]}
    assert schema_errors(converted(result)) == ()


def test_legacy_source_in_a_deployment(config: Config) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "resourceClaims": [{"name": "g", "source": {"resourceClaimTemplateName": "t"}}],
                    "containers": [claim_user("g")],
                },
            },
        },
    }
    result = convert(deployment, config)
    assert converted(result)["spec"]["template"]["spec"]["resourceClaims"] == [
        {"name": "g", "resourceClaimTemplateName": "t"}
    ]
    assert [f.path for f in findings(result, "legacy-claim-source")] == ["spec.template.spec.resourceClaims[0].source"]


# --- invalid constructs in pod specs ----------------------------------------------------------------


def test_inline_resource_claim_templates_in_a_pod_spec(config: Config) -> None:
    original = pod(
        {
            "resourceClaimTemplates": [{"name": "gpu", "spec": {"devices": {"requests": [{"name": "g"}]}}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
            "containers": [claim_user("gpu")],
        }
    )
    result = convert(original, config)
    assert not result.changed
    (error,) = errors(result)
    assert (error.rule, error.path) == ("invalid-inline-claim-template", "spec.resourceClaimTemplates")
    assert "resourceClaimTemplateName" in error.message


def test_claim_spec_inside_a_pod_claim_entry(config: Config) -> None:
    original = pod({"resourceClaims": [{"name": "gpu", "spec": {"devices": {}}}], "containers": [claim_user("gpu")]})
    result = convert(original, config)
    assert error_keys(result) == {("invalid-pod-claim-field", "spec.resourceClaims[0].spec")}


def test_resource_field_ref_to_claims(config: Config) -> None:
    user = claim_user("gpu")
    user["env"] = [{"name": "GPU", "valueFrom": {"resourceFieldRef": {"resource": "claims.gpu"}}}]
    original = pod({"resourceClaims": [{"name": "gpu", "resourceClaimName": "x"}], "containers": [user]})
    result = convert(original, config)
    assert error_keys(result) == {
        ("invalid-claim-field-ref", "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource")
    }
    assert "claims.gpu" in errors(result)[0].message


def test_container_claim_that_is_not_declared(config: Config) -> None:
    original = pod({"containers": [claim_user("gpu")], "initContainers": [claim_user("other")]})
    result = convert(original, config)
    assert error_keys(result) == {
        ("unknown-container-claim", "spec.containers[0].resources.claims[0].name"),
        ("unknown-container-claim", "spec.initContainers[0].resources.claims[0].name"),
    }


def test_invalid_constructs_do_not_block_the_device_conversion(config: Config) -> None:
    """Errors describe the bad part; the rest of the pod is still converted."""
    user = container("app", gpu(1))
    user["env"] = [{"name": "GPU", "valueFrom": {"resourceFieldRef": {"resource": "claims.app-gpu"}}}]
    result = convert(pod({"containers": [user]}), config)
    assert result.changed
    assert converted(result)["spec"]["resourceClaims"][0]["name"] == "app-gpu"
    assert [f.rule for f in errors(result)] == ["invalid-claim-field-ref"]


@pytest.mark.parametrize("version", ["v1alpha3", "v1beta1", "v1beta2", "v1"])
@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate"])
def test_a_claim_whose_devices_is_not_a_mapping_is_left_as_is_with_an_error(
    config: Config, version: str, kind: str
) -> None:
    """Found by the prefilter property test: `devices` as a list was an AttributeError."""
    spec: dict[str, Any] = {"devices": ["requests:\n- name: g\n"]}
    obj = {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": kind,
        "metadata": {"name": "n"},
        "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec,
    }
    original = copy.deepcopy(obj)
    result = convert(obj, config)
    assert obj == original
    assert not result.changed
    if version in ("v1alpha3", "v1beta1"):  # read to be moved: refused, saying why
        where = "spec.spec.devices" if kind == "ResourceClaimTemplate" else "spec.devices"
        assert [(f.rule, f.path) for f in errors(result)] == [("schema-input", where)]
