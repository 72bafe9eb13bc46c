"""Unrendered template values in counts are one thing, said one way: a warning that the file is a template."""

from __future__ import annotations

import json
from collections.abc import Sequence

from translator_cli_support import Runner

FORMS = ["${GPUS}", "$GPUS", "{{ .Values.gpus }}", "PLACEHOLDER_NUM_GPU", "__GPUS__", None]


def _pod(values: Sequence[object]) -> str:
    containers = [
        {"name": f"c{i}", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": value}}}
        for i, value in enumerate(values)
    ]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}}
    return json.dumps(pod)


def test_every_placeholder_form_and_null_is_a_template_warning(run_cli: Runner) -> None:
    result = run_cli("convert", "--report", "json", "-", stdin=_pod(FORMS))
    assert result.code == 0, result.stderr
    rows = json.loads(result.stderr)["findings"]
    warnings = [r for r in rows if r["rule"] == "template-placeholder"]
    assert len(warnings) == len(FORMS) and all(r["severity"] == "warning" for r in warnings)
    assert not [r for r in rows if r["severity"] == "error"]
    for row in warnings:
        assert "template" in row["message"]
        assert "None" not in row["message"] and "'" not in row["message"].split(":", 2)[2], row["message"]
    assert any("null is an unrendered template value" in r["message"] for r in warnings)


def test_bad_counts_are_worded_as_in_a_manifest(run_cli: Runner) -> None:
    result = run_cli("convert", "--report", "json", "-", stdin=_pod(["abc", True, 2.5]))
    messages = [r["message"] for r in json.loads(result.stderr)["findings"] if r["rule"] == "invalid-device-count"]
    assert any('"abc" is not a valid quantity' in m for m in messages)
    assert any("true is not a valid quantity" in m for m in messages)
    assert any("2.5 is not a whole number of devices" in m for m in messages)
    assert not any("True" in m or "'abc'" in m for m in messages)
