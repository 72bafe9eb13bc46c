"""Names a cluster shares (time-slicing, MPS): a request is a share of a device, never an exclusive
claim, for a pod that can land on a sharing node; a pod whose nodeSelector rules those nodes out
converts as before. Where the DRA driver hands out shares (a consumable capacity), a pod that can land
only on sharing nodes gets a claim for one share."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import converted, errors, pod
from pods import container, gpu

from dra_migrate.engine import (
    Config,
    ServingClass,
    SharedDevices,
    Target,
    convert,
    with_served_classes,
    with_shared_devices,
)

SHARING_NODES = [{"pool": "shared", "kubernetes.io/hostname": "shared-0"}]
WHOLE_NODES = [{"pool": "whole", "kubernetes.io/hostname": "whole-0"}]


def _shared(config: Config, capacity: str | None = None) -> Config:
    shared = SharedDevices("time-sliced, 4 per device", SHARING_NODES, WHOLE_NODES, capacity)
    return with_shared_devices(config, {"nvidia.com/gpu": shared})


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


def _template_request(result: Any) -> dict[str, Any]:
    (template,) = result.templates
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    return dict(request["exactly"])


@pytest.mark.parametrize(
    ("selector", "outcome"),
    [
        ({"pool": "shared"}, "share"),
        ({"kubernetes.io/hostname": "shared-0"}, "share"),
        (None, "kept"),  # it can land on a whole-GPU node too: a share there would be a GPU
        ({"pool": "whole"}, "whole"),
    ],
    ids=["the-pool", "the-node", "anywhere", "another-pool"],
)
def test_where_the_driver_hands_out_shares_a_share_becomes_a_claim_for_one(
    config: Config, selector: dict[str, str] | None, outcome: str
) -> None:
    spec: dict[str, Any] = {"containers": [container("c", gpu(1))]}
    if selector:
        spec["nodeSelector"] = selector
    result = convert(pod(spec), _shared(config, "shares"))
    if outcome == "kept":
        assert [f.rule for f in errors(result)] == ["shared-device"]
        assert not result.changed
        return
    assert not errors(result)
    request = _template_request(result)
    if outcome == "share":
        assert request["capacity"] == {"requests": {"shares": "1"}}
        assert request["count"] == 1
    else:
        assert "capacity" not in request
        assert convert(pod(spec), config).object == result.object


def test_a_share_and_a_whole_device_get_different_templates(config: Config) -> None:
    share = convert(
        pod({"containers": [container("c", gpu(1))], "nodeSelector": {"pool": "shared"}}), _shared(config, "shares")
    )
    whole = convert(pod({"containers": [container("c", gpu(1))]}), config)
    assert share.templates[0]["metadata"]["name"] != whole.templates[0]["metadata"]["name"]


def test_more_than_one_share_has_no_claim(config: Config) -> None:
    """The device plugin may give two shares from one GPU or from two; one claim cannot say which."""
    original = pod({"containers": [container("c", gpu(2))], "nodeSelector": {"pool": "shared"}})
    result = convert(original, _shared(config, "shares"))
    assert [f.rule for f in errors(result)] == ["shared-device"]
    assert "2 shares" in errors(result)[0].message
    assert not result.changed


def test_a_share_is_a_claim_even_where_a_device_class_serves_the_name(config: Config) -> None:
    """KEP-5004's own claim asks for whole devices of the class: only an explicit claim asks for a share."""
    served = with_served_classes(_shared(config, "shares"), {"nvidia.com/gpu": ServingClass("gpu.nvidia.com", ())})
    original = pod({"containers": [container("c", gpu(1))], "nodeSelector": {"pool": "shared"}})
    result = convert(original, served._replace(target=Target.parse("1.37")))
    assert _template_request(result)["capacity"] == {"requests": {"shares": "1"}}
