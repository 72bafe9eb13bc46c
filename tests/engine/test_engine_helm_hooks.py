"""A Helm hook's templates are hooks of its events, one weight below it, named after it."""

from __future__ import annotations

from typing import Any

import pytest

from dra_migrate.engine import Config, convert


def _job(annotations: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 2}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "warm", "annotations": annotations},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


@pytest.mark.parametrize(("weight", "expected"), [("7", "6"), ("-5", "-6"), (None, "-1"), ("heavy", "-1")])
def test_the_template_comes_one_weight_before_the_hook(config: Config, weight: str | None, expected: str) -> None:
    """Helm reads a weight with strconv.Atoi and takes anything else as 0."""
    annotations = {"helm.sh/hook": "test"} | ({"helm.sh/hook-weight": weight} if weight is not None else {})
    result = convert(_job(annotations), config)
    (template,) = result.templates
    assert template["metadata"]["annotations"] == {"helm.sh/hook": "test", "helm.sh/hook-weight": expected}
    assert template["metadata"]["name"].endswith("-warm")
    assert result.object is not None
    (claim,) = result.object["spec"]["template"]["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]


def test_a_workload_that_is_no_hook_keeps_its_template_plain(config: Config) -> None:
    (template,) = convert(_job({"team": "ml"}), config).templates
    assert "annotations" not in template["metadata"] and not template["metadata"]["name"].endswith("-warm")
