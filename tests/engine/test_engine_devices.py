"""Device-plugin requests -> DRA claims, rule by rule (docs/dra-api.md section 5 "Translator implications")."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from engine_support import (
    MANAGED_BY,
    MIG_SELECTOR,
    T132,
    T133,
    converted,
    errors,
    findings,
    pod,
    pod_of,
    schema_errors,
)
from pods import container, gpu, sidecar

from dra_migrate.engine import Config, Severity, convert, default_config

GPU_PATH = 'spec.containers[0].resources.limits["nvidia.com/gpu"]'


def only_template(result: Any) -> dict[str, Any]:
    assert len(result.templates) == 1, result.templates
    template: dict[str, Any] = result.templates[0]
    return template


# --- the basic rewrite --------------------------------------------------------------------------


def test_limits_become_a_claim_on_a_template(config: Config) -> None:
    original = pod_of([container("app", {"nvidia.com/gpu": 2, "cpu": "1"})])
    frozen = copy.deepcopy(original)
    result = convert(original, config)

    assert original == frozen, "the input object must not be mutated"
    assert result.changed and not errors(result)
    template = only_template(result)
    name = template["metadata"]["name"]
    assert re.fullmatch(r"gpu-nvidia-com-2-[0-9a-f]{8}", name)
    assert template == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "ns", "labels": dict([MANAGED_BY])},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 2,
                            },
                        }
                    ]
                }
            }
        },
    }
    spec = converted(result)["spec"]
    assert spec["resourceClaims"] == [{"name": "app-gpu", "resourceClaimTemplateName": name}]
    assert spec["containers"][0]["resources"] == {"limits": {"cpu": "1"}, "claims": [{"name": "app-gpu"}]}
    info = findings(result, "device-plugin-to-claim", Severity.INFO)
    assert [f.path for f in info] == ["spec.containers[0].resources"]
    assert "nvidia.com/gpu: 2" in info[0].message


def test_requests_and_limits_are_both_removed_and_empty_maps_pruned(config: Config) -> None:
    result = convert(pod_of([container("app", {"nvidia.com/gpu": 1}, {"nvidia.com/gpu": "1"})]), config)
    assert converted(result)["spec"]["containers"][0]["resources"] == {"claims": [{"name": "app-gpu"}]}


def test_only_the_device_entries_are_removed_from_maps_that_keep_other_resources(config: Config) -> None:
    limits = {"nvidia.com/gpu": 1, "memory": "1Gi"}
    requests = {"nvidia.com/gpu": 1, "cpu": "250m"}
    result = convert(pod_of([container("app", limits, requests)]), config)
    resources = converted(result)["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m"}, "claims": [{"name": "app-gpu"}]}


def test_requests_only_is_converted_too(config: Config) -> None:
    result = convert(pod_of([container("app", requests={"nvidia.com/gpu": 3})]), config)
    assert converted(result)["spec"]["containers"][0]["resources"] == {"claims": [{"name": "app-gpu"}]}
    assert only_template(result)["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3


@pytest.mark.parametrize(
    ("quantity", "count"),
    [(2, 2), ("2", 2), ("1", 1), ("1000m", 1), ("3000m", 3), (" 4 ", 4), ("1e1", 10), (32, 32), (2.0, 2)],
)
def test_quantity_forms(config: Config, quantity: Any, count: int) -> None:
    result = convert(pod_of([container("app", gpu(quantity))]), config)
    assert not errors(result)
    assert only_template(result)["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == count


def test_requests_and_limits_written_differently_but_equal_are_fine(config: Config) -> None:
    result = convert(pod_of([container("app", gpu("1"), gpu("1000m"))]), config)
    assert not errors(result)
    assert converted(result)["spec"]["containers"][0]["resources"] == {"claims": [{"name": "app-gpu"}]}


@pytest.mark.parametrize("zero", [0, "0", "0m"])
def test_zero_means_nothing_to_convert(config: Config, zero: Any) -> None:
    original = pod_of([container("app", gpu(zero))])
    result = convert(original, config)
    assert not result.changed
    assert result.object is original
    assert result.templates == []
    assert result.findings == []


def test_zero_in_one_container_does_not_stop_the_others(config: Config) -> None:
    result = convert(pod_of([container("a", gpu(0)), container("b", gpu(1))]), config)
    spec = converted(result)["spec"]
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 0}}
    assert spec["containers"][1]["resources"] == {"claims": [{"name": "b-gpu"}]}
    assert [c["name"] for c in spec["resourceClaims"]] == ["b-gpu"]


@pytest.mark.parametrize(
    ("quantity", "rule"),
    [
        ("1.5", "invalid-device-count"),
        ("500m", "invalid-device-count"),
        (1.5, "invalid-device-count"),
        (-1, "invalid-device-count"),
        ("-2", "invalid-device-count"),
        ("abc", "invalid-device-count"),
        (True, "invalid-device-count"),
        (33, "too-many-devices"),
        ("64", "too-many-devices"),
    ],
)
def test_unconvertible_counts_are_errors_and_stay(config: Config, quantity: Any, rule: str) -> None:
    original = pod_of([container("app", gpu(quantity))])
    result = convert(original, config)
    assert not result.changed
    assert result.object == original
    assert result.templates == []
    found = errors(result)
    assert [(f.rule, f.path) for f in found] == [(rule, GPU_PATH)]
    assert "'app'" in found[0].message and "nvidia.com/gpu" in found[0].message


@pytest.mark.parametrize("placeholder", ["${GPUS}", "$GPUS", "{{ .Values.gpus }}", "PLACEHOLDER_NUM_GPU", None])
def test_template_placeholders_are_left_with_a_warning(config: Config, placeholder: str | None) -> None:
    original = pod_of([container("app", gpu(placeholder))])
    result = convert(original, config)
    assert not result.changed and result.object == original
    assert not errors(result)
    assert [(f.rule, f.path) for f in findings(result, severity=Severity.WARNING)] == [
        ("template-placeholder", GPU_PATH)
    ]


def test_requests_not_equal_to_limits_is_an_error(config: Config) -> None:
    original = pod_of([container("app", gpu(2), gpu(1))])
    result = convert(original, config)
    assert not result.changed and result.object == original
    found = errors(result)
    assert [(f.rule, f.path) for f in found] == [("requests-limits-differ", GPU_PATH)]
    assert "requests 1 but limits 2" in found[0].message


def test_an_error_keeps_that_device_class_on_the_device_plugin_for_the_whole_pod(config: Config) -> None:
    """A pod cannot use one DeviceClass both ways (KEP-5004), so a bad count keeps its class's siblings too."""
    spec = [
        container("bad", gpu("1.5"), gpu("1.5")),
        container("good", {"nvidia.com/gpu": 1, "amd.com/gpu": "x"}),
        container("other", {"habana.ai/gaudi": 1}),
    ]
    result = convert(pod_of(copy.deepcopy(spec)), config)
    out = converted(result)["spec"]["containers"]
    assert out[0] == spec[0]
    assert out[1] == spec[1]
    assert out[2]["resources"] == {"claims": [{"name": "other-gaudi"}]}
    assert {(f.rule, f.path) for f in errors(result)} == {
        ("invalid-device-count", GPU_PATH),
        ("invalid-device-count", 'spec.containers[1].resources.limits["amd.com/gpu"]'),
    }
    kept = [f for f in findings(result, severity=Severity.WARNING) if f.rule == "pod-kept-on-device-plugin"]
    assert [f.path for f in kept] == ["spec.containers[1].resources"]
    assert "bad: nvidia.com/gpu" in kept[0].message


# --- which containers ---------------------------------------------------------------------------


def test_init_sidecar_and_app_containers_all_get_claims(config: Config) -> None:
    original = pod_of(
        [container("app", gpu(1))],
        init=[container("setup", gpu(1)), sidecar("proxy", gpu(1))],
    )
    result = convert(original, config)
    spec = converted(result)["spec"]
    assert [c["name"] for c in spec["resourceClaims"]] == ["proxy-gpu", "app-gpu"]
    assert spec["initContainers"][1]["resources"] == {"claims": [{"name": "proxy-gpu"}]}
    assert spec["initContainers"][1]["restartPolicy"] == "Always"
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "app-gpu"}]}
    # The init container runs before the sidecar starts, so it borrows one of the later claims.
    assert len(spec["initContainers"][0]["resources"]["claims"]) == 1
    assert spec["initContainers"][0]["resources"]["claims"][0]["name"] in {"proxy-gpu", "app-gpu"}


def test_ephemeral_containers_are_untouched(config: Config) -> None:
    debug = container("debug", gpu(1))
    original = pod({"containers": [container("app")], "ephemeralContainers": [debug]})
    result = convert(original, config)
    assert not result.changed and result.object is original and result.findings == []

    with_app_gpu = pod({"containers": [container("app", gpu(1))], "ephemeralContainers": [copy.deepcopy(debug)]})
    result = convert(with_app_gpu, config)
    assert result.changed
    assert converted(result)["spec"]["ephemeralContainers"] == [debug]
    assert [c["name"] for c in converted(result)["spec"]["resourceClaims"]] == ["app-gpu"]


def test_pod_without_device_requests_is_unchanged(config: Config) -> None:
    original = pod_of([container("app", {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "2Mi"})])
    result = convert(original, config)
    assert not result.changed and result.object is original and result.findings == []


def test_equal_requests_share_one_template(config: Config) -> None:
    result = convert(pod_of([container("a", gpu(1)), container("b", gpu("1"))]), config)
    template = only_template(result)
    spec = converted(result)["spec"]
    assert spec["resourceClaims"] == [
        {"name": "a-gpu", "resourceClaimTemplateName": template["metadata"]["name"]},
        {"name": "b-gpu", "resourceClaimTemplateName": template["metadata"]["name"]},
    ]


def test_two_device_kinds_in_one_container(config: Config) -> None:
    result = convert(pod_of([container("app", {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb": 2})]), config)
    classes = sorted(
        (t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"], t["metadata"]["name"])
        for t in result.templates
    )
    assert [c for c, _ in classes] == ["gpu.nvidia.com", "mig.nvidia.com"]
    spec = converted(result)["spec"]
    assert sorted(c["name"] for c in spec["resourceClaims"]) == ["app-gpu", "app-mig"]
    assert sorted(c["name"] for c in spec["containers"][0]["resources"]["claims"]) == ["app-gpu", "app-mig"]
    assert "limits" not in spec["containers"][0]["resources"]


# --- the built-in mapping table (docs/field-notes.md) --------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "device_class", "selectors", "request_name"),
    [
        ("nvidia.com/gpu", "gpu.nvidia.com", [], "gpu"),
        ("nvidia.com/mig-1g.5gb", "mig.nvidia.com", [MIG_SELECTOR.format("1g.5gb")], "mig"),
        ("nvidia.com/mig-3g.20gb", "mig.nvidia.com", [MIG_SELECTOR.format("3g.20gb")], "mig"),
        ("nvidia.com/mig-1g.10gb.me", "mig.nvidia.com", [MIG_SELECTOR.format("1g.10gb+me")], "mig"),
        ("nvidia.com/mig-1g.24gb.me.all", "mig.nvidia.com", [MIG_SELECTOR.format("1g.24gb+me.all")], "mig"),
        ("nvidia.com/mig-1g.24gb.gfx", "mig.nvidia.com", [MIG_SELECTOR.format("1g.24gb+gfx")], "mig"),
        ("nvidia.com/mig-1g.23gb-me", "mig.nvidia.com", [MIG_SELECTOR.format("1g.23gb-me")], "mig"),
        ("nvidia.com/mig-7g.141gb", "mig.nvidia.com", [MIG_SELECTOR.format("7g.141gb")], "mig"),
        ("nvidia.com/mig-1c.2g.10gb", "mig.nvidia.com", [MIG_SELECTOR.format("1c.2g.10gb")], "mig"),
        ("amd.com/gpu", "gpu.amd.com", [], "gpu"),
        ("gpu.intel.com/i915", "gpu.intel.com", ['device.attributes["gpu.intel.com"].driver == "i915"'], "gpu"),
        ("gpu.intel.com/xe", "gpu.intel.com", ['device.attributes["gpu.intel.com"].driver == "xe"'], "gpu"),
        ("habana.ai/gaudi", "gaudi.intel.com", [], "gaudi"),
        ("google.com/tpu", "tpu.google.com", [], "tpu"),
        ("aws.amazon.com/neuron", "neuron.aws.com", [], "neuron"),
        ("aws.amazon.com/neurondevice", "neuron.aws.com", [], "neuron"),
        ("vpc.amazonaws.com/efa", "efa.networking.k8s.aws", [], "efa"),
    ],
)
def test_builtin_mapping(
    config: Config, resource: str, device_class: str, selectors: list[str], request_name: str
) -> None:
    result = convert(pod_of([container("app", {resource: 2})]), config)
    assert not errors(result)
    request = only_template(result)["spec"]["spec"]["devices"]["requests"][0]
    assert request["name"] == request_name
    exactly = request["exactly"]
    assert exactly["deviceClassName"] == device_class
    assert exactly["count"] == 2
    assert [s["cel"]["expression"] for s in exactly.get("selectors", [])] == selectors
    assert converted(result)["spec"]["containers"][0]["resources"] == {"claims": [{"name": f"app-{request_name}"}]}
    for template in result.templates:
        assert schema_errors(template) == ()


def test_neuroncore_is_deliberately_unconvertible(config: Config) -> None:
    original = pod_of([container("a", {"aws.amazon.com/neuroncore": 2})])
    result = convert(original, config)
    assert not result.changed and result.object == original
    found = findings(result, "unconvertible-resource", Severity.WARNING)
    assert [f.path for f in found] == ['spec.containers[0].resources.limits["aws.amazon.com/neuroncore"]']
    assert "NeuronCore" in found[0].message and "not a device count" in found[0].message


@pytest.mark.parametrize(
    ("resource", "rule", "words"),
    [
        ("nvidia.com/gpu.shared", "unconvertible-resource", "time-slicing"),
        ("sgx.intel.com/epc", "unconvertible-resource", "memory size"),
        ("vendor.io/widget", "unmapped-resource", "no DRA mapping"),
        ("qat.intel.com/generic", "unmapped-resource", "add a mapping"),
    ],
)
def test_unconvertible_and_unmapped_names_stay_with_a_warning(
    config: Config, resource: str, rule: str, words: str
) -> None:
    original = pod_of([container("a", {resource: 1}, {resource: 1})])
    result = convert(original, config)
    assert not result.changed and result.object == original
    found = findings(result, severity=Severity.WARNING)
    assert [(f.rule, f.path) for f in found] == [(rule, f'spec.containers[0].resources.limits["{resource}"]')]
    assert words in found[0].message


@pytest.mark.parametrize(
    "resource",
    [
        "example.com/gpu",  # dra-example-driver names: test mappings, never built in
        "gpu.example.com/fast",
        "nvidia.com/mig-9g.10gb",  # slices are 1 to 8
        "nvidia.com/mig-1g.1000gb",  # at most 3 digits of memory
        "nvidia.com/mig-1g.05gb",
        "nvidia.com/mig-1g.5gb.me.me",
        "nvidia.com/mig-1g.5gb.turbo",  # not a profile attribute
        "nvidia.com/mig-1g.5gb+me",  # the profile's own spelling is not a valid resource name
        "nvidia.com/mig-" + "1" * 5000 + "g.5gb",
    ],
)
def test_only_real_names_are_built_in(config: Config, resource: str) -> None:
    assert config.mappings.resolve(resource) is None


def test_implicit_dra_extended_resource_names_are_kept(config: Config) -> None:
    name = "deviceclass.resource.kubernetes.io/gpu.example.com"
    original = pod_of([container("a", {name: 1})])
    result = convert(original, config)
    assert not result.changed
    assert [(f.severity, f.rule) for f in result.findings] == [(Severity.INFO, "extended-resource-dra")]


@pytest.mark.parametrize("companion", ["nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"])
def test_hami_companion_keeps_nvidia_gpu_in_that_container(config: Config, companion: str) -> None:
    shared = container("shared", {"nvidia.com/gpu": 1, companion: 30})
    whole = container("whole", gpu(1))
    result = convert(pod_of([copy.deepcopy(shared), copy.deepcopy(whole)]), config)
    assert not result.changed  # the vGPU share keeps the pod's other nvidia.com/gpu on the device plugin too
    warned = {(f.rule, f.path) for f in findings(result, severity=Severity.WARNING)}
    assert warned == {
        ("resource-kept-with-companion", GPU_PATH),
        ("unconvertible-resource", f'spec.containers[0].resources.limits["{companion}"]'),
        ("pod-kept-on-device-plugin", "spec.containers[1].resources"),
    }


def test_existing_claims_are_kept_next_to_new_ones(config: Config) -> None:
    """The NVIDIA IMEX demo shape: a container with both a ComputeDomain claim and nvidia.com/gpu."""
    main = container("main", gpu("1"))
    main["resources"]["claims"] = [{"name": "imex"}]
    original = pod(
        {"resourceClaims": [{"name": "imex", "resourceClaimTemplateName": "imex-channel"}], "containers": [main]}
    )
    result = convert(original, config)
    spec = converted(result)["spec"]
    template = only_template(result)["metadata"]["name"]
    assert spec["resourceClaims"] == [
        {"name": "imex", "resourceClaimTemplateName": "imex-channel"},
        {"name": "main-gpu", "resourceClaimTemplateName": template},
    ]
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "imex"}, {"name": "main-gpu"}]}
    assert schema_errors(converted(result)) == ()


def test_pod_that_already_uses_only_claims_is_unchanged(config: Config) -> None:
    original = pod(
        {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
        }
    )
    result = convert(original, config)
    assert not result.changed and result.object is original and result.findings == []


# --- null / odd shapes (convert never raises) -------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"resourceClaims": None, "containers": [container("a", gpu(1))]},
        {"containers": [{"name": "a", "image": "x", "resources": {"claims": None, "limits": gpu(1)}}]},
        {"containers": [{"name": "a", "image": "x", "resources": {"limits": None, "requests": gpu(1)}}]},
        {"containers": None, "initContainers": [container("a", gpu(1))]},
    ],
    ids=["resourceClaims-null", "claims-null", "limits-null", "containers-null"],
)
def test_null_fields_still_give_a_consistent_pod(config: Config, spec: dict[str, Any]) -> None:
    result = convert(pod(spec), config)
    assert result.changed and not errors(result)
    out = converted(result)["spec"]
    declared = {c["name"] for c in out["resourceClaims"]}
    used = {
        c["name"]
        for kind in ("initContainers", "containers")
        for item in out.get(kind) or []
        for c in (item.get("resources") or {}).get("claims") or []
    }
    assert used == declared == {"a-gpu"}
    again = convert(converted(result), config)
    assert not again.changed and not errors(again)


@pytest.mark.parametrize("obj", [{}, {"kind": 3}, {"apiVersion": "v1"}, {"apiVersion": "v1", "kind": "Pod"}])
def test_objects_without_a_usable_shape_are_returned_unchanged(config: Config, obj: dict[str, Any]) -> None:
    result = convert(obj, config)
    assert not result.changed and result.object == obj


# --- targets before DRA GA --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "api_version"), [(T132, "resource.k8s.io/v1beta1"), (T133, "resource.k8s.io/v1beta2")]
)
def test_before_ga_templates_use_the_served_version_and_the_gate_is_warned(target: Any, api_version: str) -> None:
    config = default_config(str(target))
    result = convert(pod_of([container("app", gpu(2))]), config)
    template = only_template(result)
    assert template["apiVersion"] == api_version
    request = template["spec"]["spec"]["devices"]["requests"][0]
    if api_version.endswith("v1beta1"):
        assert request == {
            "name": "gpu",
            "deviceClassName": "gpu.nvidia.com",
            "allocationMode": "ExactCount",
            "count": 2,
        }
    else:
        assert request["exactly"]["count"] == 2
    assert schema_errors(template, target) == ()
    assert schema_errors(converted(result), target) == ()
    gate = findings(result, "dra-gate-off", Severity.WARNING)
    assert [f.path for f in gate] == ["spec.resourceClaims"]


def test_no_gate_warning_from_134(config: Config) -> None:
    result = convert(pod_of([container("app", gpu(2))]), config)
    assert findings(result, "dra-gate-off") == []
    assert default_config("1.35").target.dra_version == "v1"
