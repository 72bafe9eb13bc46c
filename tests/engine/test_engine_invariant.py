"""THE INVARIANT: a converted pod never needs more devices than before (podspec.py module docstring).

Device-plugin need per resource = max(largest non-sidecar init container + sidecars started before
it, sum over app containers and sidecars). The DRA need is the sum of the counts of the pod's claims.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from engine_support import (
    RESOURCE_KEYS,
    check_invariant,
    container_claims,
    converted,
    device_plugin_need,
    dra_need,
    errors,
    findings,
    pod_of,
    schema_errors,
    visible,
)
from pods import container, gpu, sidecar

from dra_migrate.engine import Config, Severity, convert

GPU = RESOURCE_KEYS["nvidia.com/gpu"]


def run(
    config: Config, containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], Any]:
    before = pod_of(containers, init)
    result = convert(before, config)
    assert result.changed and not errors(result)
    assert schema_errors(converted(result)) == ()
    return before["spec"], converted(result)["spec"], result.templates, result


def sees(after: dict[str, Any], templates: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    return {key: counts[GPU] for key, counts in visible(after, templates).items()}


# --- the helper itself ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "init", "need"),
    [
        ([container("a", gpu(1))], [container("i", gpu(1))], 1),
        ([container("a", gpu(1))], [container("i", gpu(2))], 2),
        ([container("a", gpu(1)), container("b", gpu(2))], [container("i", gpu(2))], 3),
        ([container("a", gpu(1))], [sidecar("s", gpu(1)), container("i", gpu(2))], 3),
        ([container("a", gpu(1))], [container("i", gpu(2)), sidecar("s", gpu(1))], 2),
        ([container("a")], [container("i1", gpu(3)), container("i2", gpu("2"))], 3),
        ([container("a", gpu(0))], [], 0),
    ],
)
def test_device_plugin_need_helper(containers: list[dict[str, Any]], init: list[dict[str, Any]], need: int) -> None:
    assert device_plugin_need(pod_of(containers, init)["spec"], "nvidia.com/gpu") == need


# --- specific pods ----------------------------------------------------------------------------------


def test_init_1_app_1_needs_one_device_in_total(config: Config) -> None:
    before, after, templates, _ = run(config, [container("app", gpu(1))], [container("init", gpu(1))])
    assert dra_need(after, templates) == Counter({GPU: 1})
    assert [c["name"] for c in after["resourceClaims"]] == ["app-gpu"]
    assert container_claims(after["initContainers"][0]) == ["app-gpu"]
    assert sees(after, templates) == {("initContainers", 0): 1, ("containers", 0): 1}
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_init_2_app_1_gets_one_extra_device(config: Config) -> None:
    before, after, templates, _ = run(config, [container("app", gpu(1))], [container("init", gpu(2))])
    assert dra_need(after, templates) == Counter({GPU: 2})
    assert [c["name"] for c in after["resourceClaims"]] == ["app-gpu", "init-gpu"]
    assert sorted(container_claims(after["initContainers"][0])) == ["app-gpu", "init-gpu"]
    assert container_claims(after["containers"][0]) == ["app-gpu"]
    assert sees(after, templates) == {("initContainers", 0): 2, ("containers", 0): 1}
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_sidecar_started_before_the_init_container_keeps_its_devices(config: Config) -> None:
    before, after, templates, _ = run(
        config, [container("app", gpu(1))], [sidecar("proxy", gpu(1)), container("init", gpu(2))]
    )
    # device plugin: max(init 2 + running sidecar 1, app 1 + sidecar 1) = 3
    assert device_plugin_need(before, "nvidia.com/gpu") == 3
    assert dra_need(after, templates) == Counter({GPU: 3})
    assert "proxy-gpu" not in container_claims(after["initContainers"][1])
    assert sees(after, templates) == {("initContainers", 0): 1, ("initContainers", 1): 2, ("containers", 0): 1}
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_sidecar_started_after_the_init_container_lends_its_claim(config: Config) -> None:
    before, after, templates, _ = run(
        config, [container("app", gpu(1))], [container("init", gpu(2)), sidecar("proxy", gpu(1))]
    )
    assert dra_need(after, templates) == Counter({GPU: 2})
    assert sorted(container_claims(after["initContainers"][0])) == ["app-gpu", "proxy-gpu"]
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_two_init_containers_reuse_the_extra_claim(config: Config) -> None:
    before, after, templates, _ = run(
        config, [container("app", gpu(1))], [container("first", gpu(3)), container("second", gpu(2))]
    )
    assert dra_need(after, templates) == Counter({GPU: 3})
    assert [c["name"] for c in after["resourceClaims"]] == ["app-gpu", "first-gpu"]
    assert sorted(container_claims(after["initContainers"][0])) == ["app-gpu", "first-gpu"]
    # "second" needs 2: the 2-device extra claim made for "first" fits exactly.
    assert container_claims(after["initContainers"][1]) == ["first-gpu"]
    assert sees(after, templates) == {("initContainers", 0): 3, ("initContainers", 1): 2, ("containers", 0): 1}
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_multiple_app_containers_exact_subset(config: Config) -> None:
    before, after, templates, result = run(
        config,
        [container("a", gpu(2)), container("b", gpu(1)), container("c", gpu(3))],
        [container("i1", gpu(4)), container("i2", gpu(5))],
    )
    assert dra_need(after, templates) == Counter({GPU: 6})
    assert sorted(container_claims(after["initContainers"][0])) == ["b-gpu", "c-gpu"]  # 1 + 3 = 4
    assert sorted(container_claims(after["initContainers"][1])) == ["a-gpu", "c-gpu"]
    assert sees(after, templates) == {
        ("initContainers", 0): 4,
        ("initContainers", 1): 5,
        ("containers", 0): 2,
        ("containers", 1): 1,
        ("containers", 2): 3,
    }
    assert findings(result, "init-container-sees-more") == []
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_no_exact_subset_means_the_init_container_sees_more_and_is_warned(config: Config) -> None:
    before, after, templates, result = run(
        config, [container("a", gpu(2)), container("b", gpu(2))], [container("init", gpu(1))]
    )
    assert dra_need(after, templates) == Counter({GPU: 4})
    assert sees(after, templates)[("initContainers", 0)] == 2
    warned = findings(result, "init-container-sees-more", Severity.WARNING)
    assert [f.path for f in warned] == ["spec.initContainers[0].resources"]
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_init_container_larger_than_everything_else(config: Config) -> None:
    before, after, templates, _ = run(
        config, [container("a", gpu(1)), container("b", gpu(1))], [sidecar("s", gpu(2)), container("init", gpu(8))]
    )
    # max(8 + 2, 1 + 1 + 2) = 10; the init container gets a, b and a 6-device extra claim.
    assert dra_need(after, templates) == Counter({GPU: 10})
    assert sees(after, templates)[("initContainers", 1)] == 8
    check_invariant(before, after, templates, ["nvidia.com/gpu"])


def test_device_kinds_are_counted_separately(config: Config) -> None:
    mig = "nvidia.com/mig-1g.5gb"
    before, after, templates, _ = run(
        config,
        [container("app", {"nvidia.com/gpu": 1, mig: 1})],
        [container("init", {"nvidia.com/gpu": 1, mig: 2, "amd.com/gpu": 1})],
    )
    assert dra_need(after, templates) == Counter({GPU: 1, RESOURCE_KEYS[mig]: 2, RESOURCE_KEYS["amd.com/gpu"]: 1})
    check_invariant(before, after, templates, ["nvidia.com/gpu", mig, "amd.com/gpu"])


def test_one_container_with_two_names_of_one_device_kind(config: Config) -> None:
    """aws.amazon.com/neuron and /neurondevice map to the same class and request: one template identity.

    Regression: the init container's reuse pool used to hold only the last claim of such a container,
    twice, so the init container was given one 1-device claim for a 2-device request.
    """
    before = pod_of(
        [container("app", {"aws.amazon.com/neuron": 1, "aws.amazon.com/neurondevice": 1})],
        [container("init", {"aws.amazon.com/neuron": 2})],
    )
    result = convert(before, config)
    assert not errors(result)
    after = converted(result)["spec"]
    key = ("neuron.aws.com", ())
    assert dra_need(after, result.templates) == Counter({key: 2})
    seen = {slot: counts[key] for slot, counts in visible(after, result.templates).items()}
    assert seen == {("initContainers", 0): 2, ("containers", 0): 2}
    assert sorted(container_claims(after["initContainers"][0])) == ["app-neuron", "app-neuron-2"]


def test_exact_subset_is_found_in_large_pools(config: Config) -> None:
    apps = [container(f"a{i}", gpu(1)) for i in range(10)]
    before, after, templates, _ = run(config, apps, [container("init", gpu(9))])
    check_invariant(before, after, templates, ["nvidia.com/gpu"])
    assert sees(after, templates)[("initContainers", 0)] == 9
