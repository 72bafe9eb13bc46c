"""Claim and template names: DNS labels, deterministic, unique, never colliding (docs/dra-api.md section 4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_support import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    MANAGED_BY,
    all_pod_claim_names,
    converted,
    errors,
    pod,
    pod_of,
    schema_errors,
)
from pods import container, gpu

from dra_migrate.engine import (
    Config,
    DeviceRequestSpec,
    OpaqueConfig,
    build_template,
    convert,
    parse_config,
    template_name,
)


def names_of(result: Any) -> list[str]:
    return all_pod_claim_names(converted(result)["spec"])


def test_long_container_names_give_valid_unique_claim_names(config: Config) -> None:
    long_a = "a" * 63
    long_b = "a" * 62 + "b"  # same 63-char prefix once "-gpu" is appended and the name is cut
    result = convert(pod_of([container(long_a, gpu(1)), container(long_b, gpu(1))]), config)
    names = names_of(result)
    assert len(names) == len(set(names)) == 2
    for name in names:
        assert len(name) <= 63 and DNS_LABEL.match(name), name
    assert schema_errors(converted(result)) == ()


def test_claim_names_are_deterministic(config: Config) -> None:
    spec = pod_of([container("x" * 60, {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb": 1})], [container("i", gpu(3))])
    first = convert(copy.deepcopy(spec), config)
    second = convert(copy.deepcopy(spec), config)
    assert first.object == second.object
    assert first.templates == second.templates


def test_generated_names_avoid_existing_pod_claim_names(config: Config) -> None:
    existing = [
        {"name": "app-gpu", "resourceClaimName": "shared-gpu"},
        {"name": "app-gpu-2", "resourceClaimTemplateName": "other"},
    ]
    app = container("app", gpu(1))
    app["resources"]["claims"] = [{"name": "app-gpu"}]
    result = convert(pod({"resourceClaims": copy.deepcopy(existing), "containers": [app]}), config)
    spec = converted(result)["spec"]
    assert spec["resourceClaims"][:2] == existing
    assert spec["resourceClaims"][2]["name"] == "app-gpu-3"
    assert spec["containers"][0]["resources"]["claims"] == [{"name": "app-gpu"}, {"name": "app-gpu-3"}]
    assert not errors(result)


def test_two_claims_of_one_request_name_in_one_container_are_numbered(config: Config) -> None:
    result = convert(pod_of([container("c", {"nvidia.com/mig-1g.5gb": 1, "nvidia.com/mig-2g.10gb": 1})]), config)
    assert sorted(names_of(result)) == ["c-mig", "c-mig-2"]


def test_collision_with_an_existing_long_name(config: Config) -> None:
    long_name = "c" * 63
    first = convert(pod_of([container(long_name, gpu(1))]), config)
    generated = names_of(first)[0]
    clash = pod(
        {
            "resourceClaims": [{"name": generated, "resourceClaimName": "x"}],
            "containers": [container(long_name, gpu(1))],
        }
    )
    result = convert(clash, config)
    names = names_of(result)
    assert names[0] == generated and names[1] != generated
    assert len(names[1]) <= 63 and DNS_LABEL.match(names[1])


def test_unnamed_container_still_gets_a_label(config: Config) -> None:
    result = convert(pod({"containers": [{"image": "x", "resources": {"limits": gpu(1)}}]}), config)
    (name,) = names_of(result)
    assert DNS_LABEL.match(name), name


# --- template names -------------------------------------------------------------------------------


BASE = DeviceRequestSpec("nvidia.com/gpu", "gpu.nvidia.com", (), (), "gpu")


@pytest.mark.parametrize(
    "other",
    [
        DeviceRequestSpec("nvidia.com/gpu", "gpu2.nvidia.com", (), (), "gpu"),
        DeviceRequestSpec("nvidia.com/gpu", "gpu.nvidia.com", ("device.driver == 'x'",), (), "gpu"),
        DeviceRequestSpec("nvidia.com/gpu", "gpu.nvidia.com", (), (OpaqueConfig("gpu.nvidia.com", {"a": 1}),), "gpu"),
        DeviceRequestSpec("nvidia.com/gpu", "gpu.nvidia.com", (), (OpaqueConfig("gpu.nvidia.com", {"a": 2}),), "gpu"),
        DeviceRequestSpec("nvidia.com/gpu", "gpu.nvidia.com", (), (), "accel"),
    ],
    ids=["class", "selectors", "config", "config-parameters", "request-name"],
)
def test_template_name_differs_when_anything_differs(other: DeviceRequestSpec) -> None:
    assert template_name(other, 1) != template_name(BASE, 1)


def test_template_name_depends_on_count_and_is_deterministic() -> None:
    assert template_name(BASE, 1) == template_name(BASE, 1)
    assert template_name(BASE, 1) != template_name(BASE, 2)
    # The resource name itself is not part of the identity: equal requests share a template.
    same = DeviceRequestSpec("example.com/other", "gpu.nvidia.com", (), (), "gpu")
    assert template_name(same, 1) == template_name(BASE, 1)


def test_template_name_is_a_valid_name_even_for_a_long_class() -> None:
    spec = DeviceRequestSpec("x.io/y", "a" * 60 + ".very-long-device-class." + "b" * 60 + ".example.com", (), (), "y")
    name = template_name(spec, 32)
    assert len(name) <= 63 and DNS_LABEL.match(name) and DNS_SUBDOMAIN.match(name), name


def test_template_metadata_namespace_and_label() -> None:
    with_ns = build_template(BASE, 2, "team-a")
    assert with_ns["metadata"]["namespace"] == "team-a"
    assert with_ns["metadata"]["labels"] == dict([MANAGED_BY])
    without = build_template(BASE, 2, None)
    assert "namespace" not in without["metadata"]
    assert without["metadata"]["labels"] == dict([MANAGED_BY])


def test_namespace_less_workload_gives_namespace_less_templates(config: Config) -> None:
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [container("c", gpu(1))]}}},
    }
    result = convert(deployment, config)
    assert [t["metadata"].get("namespace") for t in result.templates] == [None]
    deployment["metadata"]["namespace"] = "prod"
    result = convert(deployment, config)
    assert [t["metadata"]["namespace"] for t in result.templates] == ["prod"]


def test_config_changes_the_template_name_through_the_mapping_file() -> None:
    def name_for(parameters: dict[str, Any]) -> str:
        cfg = parse_config(
            {
                "mappings": [
                    {
                        "resource": "nvidia.com/gpu",
                        "deviceClassName": "gpu.nvidia.com",
                        "config": [{"driver": "gpu.nvidia.com", "parameters": parameters}],
                    }
                ]
            }
        )
        result = convert(pod_of([container("c", gpu(1))]), cfg)
        (template,) = result.templates
        return str(template["metadata"]["name"])

    assert name_for({"sharing": "TimeSlicing"}) == name_for({"sharing": "TimeSlicing"})
    assert name_for({"sharing": "TimeSlicing"}) != name_for({"sharing": "MPS"})
