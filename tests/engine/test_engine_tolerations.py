"""Converted pods keep the toleration kube-apiserver's ExtendedResourceToleration plugin gave them
for the resource they no longer request (engine/tolerations.py); the webhook, which runs after the
plugin, does not add it."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import findings, pod
from pods import container, gpu

from dra_migrate.engine import Severity, at_admission, convert, default_config, parse_config

PLUGIN_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _converted(spec: dict[str, Any], config: Any = None) -> dict[str, Any]:
    result = convert(pod(spec), config or default_config())
    assert result.changed and result.object is not None
    return result.object


def test_the_toleration_is_added_for_each_converted_resource() -> None:
    result = convert(pod({"containers": [container("a", gpu(2))]}), default_config())
    assert result.object is not None
    assert result.object["spec"]["tolerations"] == [PLUGIN_TOLERATION]
    (info,) = [f for f in findings(result, severity=Severity.INFO) if f.rule == "resource-toleration"]
    assert info.path == "spec.tolerations" and "ExtendedResourceToleration" in info.message


@pytest.mark.parametrize(
    "existing",
    [
        PLUGIN_TOLERATION,
        {"key": "nvidia.com/gpu", "operator": "Exists"},  # every effect
        {"operator": "Exists"},  # every taint
    ],
)
def test_a_toleration_that_already_covers_it_is_not_repeated(existing: dict[str, str]) -> None:
    converted = _converted({"containers": [container("a", gpu(1))], "tolerations": [existing]})
    assert converted["spec"]["tolerations"] == [existing]


def test_an_equal_toleration_for_one_value_does_not_cover_every_taint() -> None:
    narrow = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    converted = _converted({"containers": [container("a", gpu(1))], "tolerations": [narrow]})
    assert converted["spec"]["tolerations"] == [narrow, PLUGIN_TOLERATION]


def test_it_can_be_turned_off_and_the_webhook_never_adds_it() -> None:
    spec = {"containers": [container("a", gpu(1))]}
    assert "tolerations" not in _converted(spec, parse_config({"resourceTolerations": False}))["spec"]
    assert "tolerations" not in _converted(spec, at_admission(default_config()))["spec"]


def test_converting_again_changes_nothing() -> None:
    once = _converted({"containers": [container("a", gpu(1))]})
    assert not convert(once, default_config()).changed


def test_node_name_to_selection_says_taints_and_cordons_now_apply() -> None:
    result = convert(pod({"containers": [container("a", gpu(1))], "nodeName": "gpu-node-7"}), default_config())
    (info,) = [f for f in findings(result, severity=Severity.INFO) if f.rule == "node-name-to-selector"]
    assert "taints" in info.message and "cordon" in info.message
