"""The mapping/config file: user entries add to and override the built-in table; unknown keys are errors."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import MIG_SELECTOR, converted, errors, findings, pod_of, schema_errors
from pods import container, gpu

from dra_migrate.engine import ConfigError, Severity, convert, default_config, parse_config


def request_of(result: Any) -> dict[str, Any]:
    (template,) = result.templates
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert len(requests) == 1
    request: dict[str, Any] = requests[0]
    return request


def test_user_exact_entry_adds_a_resource() -> None:
    cfg = parse_config({"mappings": [{"resource": "vendor.io/widget", "deviceClassName": "widget.vendor.io"}]})
    result = convert(pod_of([container("c", {"vendor.io/widget": 2})]), cfg)
    assert request_of(result) == {
        "name": "widget",
        "exactly": {"deviceClassName": "widget.vendor.io", "allocationMode": "ExactCount", "count": 2},
    }
    # Built-ins are still there.
    result = convert(pod_of([container("c", gpu(1))]), cfg)
    assert request_of(result)["exactly"]["deviceClassName"] == "gpu.nvidia.com"


def test_user_entry_overrides_a_builtin_with_the_same_key() -> None:
    cfg = parse_config(
        {"mappings": [{"resource": "nvidia.com/gpu", "deviceClassName": "gpu.example.com", "requestName": "accel"}]}
    )
    result = convert(pod_of([container("c", gpu(1))]), cfg)
    assert request_of(result)["name"] == "accel"
    assert request_of(result)["exactly"]["deviceClassName"] == "gpu.example.com"
    assert converted(result)["spec"]["resourceClaims"][0]["name"] == "c-accel"


def test_user_entry_can_make_an_unconvertible_builtin_convertible() -> None:
    cfg = parse_config({"mappings": [{"resource": "nvidia.com/gpu.shared", "deviceClassName": "gpu.nvidia.com"}]})
    result = convert(pod_of([container("c", {"nvidia.com/gpu.shared": 1})]), cfg)
    assert result.changed and request_of(result)["exactly"]["deviceClassName"] == "gpu.nvidia.com"


def test_user_pattern_with_captures_in_class_and_selectors() -> None:
    cfg = parse_config(
        {
            "mappings": [
                {
                    "pattern": r"acme\.com/(?P<model>[a-z0-9]+)-(?P<mem>[0-9]+)g",
                    "deviceClassName": "${model}.acme.com",
                    "selectors": ['device.attributes["acme.com"].memory == "${mem}G"', "device.driver == 'acme.com'"],
                }
            ]
        }
    )
    result = convert(pod_of([container("c", {"acme.com/a100-80g": 1})]), cfg)
    request = request_of(result)
    assert request["name"] == "a100-80g"  # derived from the resource name
    assert request["exactly"]["deviceClassName"] == "a100.acme.com"
    assert [s["cel"]["expression"] for s in request["exactly"]["selectors"]] == [
        'device.attributes["acme.com"].memory == "80G"',
        "device.driver == 'acme.com'",
    ]
    # A name the pattern does not fully match stays unmapped.
    other = convert(pod_of([container("c", {"acme.com/a100-80gb": 1})]), cfg)
    assert not other.changed and [f.rule for f in other.findings] == ["unmapped-resource"]


def test_user_pattern_overrides_the_builtin_mig_pattern() -> None:
    cfg = parse_config(
        {
            "mappings": [
                {
                    "pattern": r"nvidia\.com/mig-(?P<g>[0-9]+)g\.(?P<mem>[0-9]+)gb",
                    "deviceClassName": "mig-${g}g-${mem}gb.gpu.nvidia.com",
                }
            ]
        }
    )
    result = convert(pod_of([container("c", {"nvidia.com/mig-1g.12gb": 1})]), cfg)
    assert request_of(result)["exactly"]["deviceClassName"] == "mig-1g-12gb.gpu.nvidia.com"
    assert "selectors" not in request_of(result)["exactly"]
    # Without the user entry the built-in one applies.
    builtin = convert(pod_of([container("c", {"nvidia.com/mig-1g.12gb": 1})]), default_config())
    assert request_of(builtin)["exactly"]["selectors"] == [{"cel": {"expression": MIG_SELECTOR.format("1g.12gb")}}]


def test_dollar_signs_in_cel_that_are_not_placeholders_are_kept() -> None:
    """Regression: selectors went through string.Template, so a CEL regex anchor made convert() raise."""
    expression = 'device.attributes["acme.com"].model.matches("^A100.*$")'
    cfg = parse_config(
        {"mappings": [{"resource": "acme.com/gpu", "deviceClassName": "gpu.acme.com", "selectors": [expression]}]}
    )
    result = convert(pod_of([container("c", {"acme.com/gpu": 1})]), cfg)
    assert request_of(result)["exactly"]["selectors"] == [{"cel": {"expression": expression}}]


def test_opaque_config_goes_into_the_template() -> None:
    parameters = {"apiVersion": "gpu.acme.com/v1", "kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing"}}
    cfg = parse_config(
        {
            "mappings": [
                {
                    "resource": "acme.com/gpu",
                    "deviceClassName": "gpu.acme.com",
                    "requestName": "gpu",
                    "config": [{"driver": "gpu.acme.com", "parameters": parameters}],
                }
            ]
        }
    )
    result = convert(pod_of([container("c", {"acme.com/gpu": 1})]), cfg)
    (template,) = result.templates
    assert template["spec"]["spec"]["devices"]["config"] == [
        {"requests": ["gpu"], "opaque": {"driver": "gpu.acme.com", "parameters": parameters}}
    ]
    assert schema_errors(template) == ()


def test_user_unconvertible_entry_and_companions() -> None:
    cfg = parse_config(
        {
            "mappings": [
                {"resource": "vendor.io/gpu", "deviceClassName": "gpu.vendor.io"},
                {
                    "resource": "vendor.io/vram",
                    "unconvertible": "vram is a memory share",
                    "keepsUnconverted": ["vendor.io/gpu"],
                },
            ]
        }
    )
    original = pod_of([container("c", {"vendor.io/gpu": 1, "vendor.io/vram": 4})])
    result = convert(original, cfg)
    assert not result.changed and result.object == original
    assert {(f.rule, f.message.split(": ", 1)[-1]) for f in findings(result, severity=Severity.WARNING)} >= {
        ("unconvertible-resource", "vendor.io/vram kept: vram is a memory share"),
    }
    assert [f.rule for f in findings(result, severity=Severity.WARNING)].count("resource-kept-with-companion") == 1


def test_builtin_mappings_can_be_switched_off() -> None:
    cfg = parse_config({"builtinMappings": False})
    result = convert(pod_of([container("c", gpu(1))]), cfg)
    assert not result.changed
    assert [f.rule for f in result.findings] == ["unmapped-resource"]


def test_target_and_node_name_settings() -> None:
    cfg = parse_config({"targetVersion": "v1.33.2", "nodeName": {"mode": "nodeAffinity", "scope": "all"}})
    assert str(cfg.target) == "1.33" and cfg.target.dra_version == "v1beta2"
    assert (cfg.node_name.mode, cfg.node_name.scope) == ("nodeAffinity", "all")
    assert str(parse_config({"targetVersion": "1.33"}, "1.35").target) == "1.35"  # the override wins
    defaults = parse_config(None)
    assert str(defaults.target) == "1.34"
    assert (defaults.node_name.mode, defaults.node_name.scope) == ("nodeSelector", "claims")


@pytest.mark.parametrize(
    ("data", "location", "words"),
    [
        ({"mapping": []}, "(top level)", "'mapping' was unexpected"),
        ({"mappings": [{"resource": "a.io/b", "deviceclass": "x"}]}, "mappings[0]", "'deviceclass' was unexpected"),
        (
            {
                "mappings": [
                    {
                        "resource": "a.io/b",
                        "deviceClassName": "x",
                        "config": [{"driver": "d.io", "parameters": {}, "x": 1}],
                    }
                ]
            },
            "mappings[0].config[0]",
            "'x' was unexpected",
        ),
        (
            {"mappings": [{"resource": "a.io/b", "pattern": "a", "deviceClassName": "x"}]},
            "mappings[0]",
            "valid under each",
        ),
        ({"mappings": [{"deviceClassName": "x"}]}, "mappings[0]", "is not valid under any"),
        (
            {"mappings": [{"pattern": "(", "deviceClassName": "x"}]},
            "mappings[0].pattern",
            "not a valid regular expression",
        ),
        (
            {"mappings": [{"pattern": "a/(?P<m>x)", "deviceClassName": "${n}.io"}]},
            "mappings[0]",
            "${n} is not a named group",
        ),
        ({"mappings": [{"resource": "a.io/b"}]}, "mappings[0]", "needs deviceClassName"),
        (
            {"mappings": [{"resource": "a.io/b", "deviceClassName": "x", "requestName": "Bad_Name"}]},
            "mappings[0].requestName",
            "does not match",
        ),
        ({"targetVersion": "1.31"}, "targetVersion", "not supported"),
        ({"targetVersion": "banana"}, "targetVersion", "not of the form"),
        ({"nodeName": {"mode": "hostname"}}, "nodeName.mode", "is not one of"),
        ({"nodeName": {"scope": "all", "typo": 1}}, "nodeName", "'typo' was unexpected"),
        ({"workloads": [{"kind": "X"}]}, "workloads[0]", "'podSpecPaths' is a required property"),
        (
            {"workloads": [{"kind": "X", "podSpecPaths": ["spec..template"]}]},
            "workloads[0].podSpecPaths[0]",
            "bad path segment",
        ),
        ({"webhook": {"mode": "audit"}}, "(top level)", "'webhook' was unexpected"),  # the engine's part only
    ],
)
def test_config_errors_name_the_field(data: dict[str, Any], location: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    message = str(caught.value)
    assert message.startswith(f"{location}:"), message
    assert words in message, message


def test_config_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match=r"^\(top level\): the configuration must be a mapping"):
        parse_config([1, 2])  # type: ignore[arg-type]


def test_errors_are_not_reported_for_valid_defaults() -> None:
    result = convert(pod_of([container("c", gpu(1))]), default_config("1.35"))
    assert not errors(result) and result.templates[0]["apiVersion"] == "resource.k8s.io/v1"
