"""Names a cluster shares (time-slicing, MPS): a request is a share of a device, never an exclusive
claim, for a pod that can land on a sharing node; a pod whose nodeSelector rules those nodes out
converts as before."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import container, converted, errors, gpu, pod

from dra_migrate.engine import Config, convert, with_shared_devices

SHARING_NODES = [{"pool": "shared", "kubernetes.io/hostname": "shared-0"}]


def _shared(config: Config) -> Config:
    return with_shared_devices(config, {"nvidia.com/gpu": ("time-sliced, 4 per device", SHARING_NODES)})


@pytest.mark.parametrize(
    ("selector", "kept"),
    [
        (None, True),
        ({"pool": "shared"}, True),
        ({"kubernetes.io/hostname": "shared-0"}, True),
        ({"pool": "whole"}, False),
        ({"pool": "shared", "zone": "b"}, False),
    ],
    ids=["anywhere", "the-pool", "the-node", "another-pool", "a-label-no-sharing-node-has"],
)
def test_a_shared_name_is_kept_where_the_pod_can_meet_it(
    config: Config, selector: dict[str, str] | None, kept: bool
) -> None:
    spec: dict[str, Any] = {"containers": [container("c", gpu(1))]}
    if selector:
        spec["nodeSelector"] = selector
    original = pod(spec)
    result = convert(original, _shared(config))
    if kept:
        assert [(f.rule, f.path) for f in errors(result)] == [
            ("shared-device", 'spec.containers[0].resources.limits["nvidia.com/gpu"]')
        ]
        assert "time-sliced" in errors(result)[0].message
        assert not result.changed
    else:
        assert not errors(result)
        assert converted(result)["spec"]["resourceClaims"]
        assert convert(pod(spec), config).object == result.object  # as without the cluster's knowledge


def test_other_names_are_not_affected(config: Config) -> None:
    original = pod({"containers": [container("c", gpu(1, "nvidia.com/mig-1g.10gb"))]})
    assert convert(original, _shared(config)).object == convert(original, config).object
