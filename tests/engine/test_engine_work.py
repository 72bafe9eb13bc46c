"""The engine's work grows linearly with the claims it makes (no timing: steps are counted).

A pattern mapping can match any number of names, and the names of one container's claims share
one base (`<container>-<request>`), so every per-claim step that rescans earlier claims made a
pod with n mapped names cost n squared steps.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from dra_migrate.engine import convert, parse_config

# Every `accel.test/<model>` name is its own device class with one shared request name.
CONFIG = parse_config(
    {
        "builtinMappings": False,
        "mappings": [
            {
                "pattern": r"accel\.test/(?P<model>[a-z0-9]+)",
                "deviceClassName": "${model}.accel.test",
                "requestName": "accel",
            }
        ],
    }
)


def accel_pod(names: int, existing_claims: int = 0) -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": {f"accel.test/m{index}": 1 for index in range(names)}}
    if existing_claims:
        resources["claims"] = [{"name": f"user-{index}"} for index in range(existing_claims)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [{"name": "main", "image": "x", "resources": resources}],
            "resourceClaims": [{"name": f"user-{index}", "resourceClaimName": "c"} for index in range(existing_claims)],
        },
    }


@contextmanager
def calls_counted() -> Iterator[Counter[str]]:
    """Python function calls made inside the block, by function name (a step count, not a timing)."""
    counts: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            counts[frame.f_code.co_name] += 1

    sys.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(None)


@pytest.mark.parametrize("names", [100, 400])
def test_claim_naming_and_grouping_are_linear(names: int) -> None:
    pod = accel_pod(names)
    with calls_counted() as calls:
        result = convert(pod, CONFIG)
    claims = result.object["spec"]["resourceClaims"] if result.object else []
    assert len(claims) == len({claim["name"] for claim in claims}) == names
    # Quadratic before: about names**2 / 2 of each (claim names, request identities).
    assert calls["to_label"] <= 3 * names
    assert calls["identity"] <= 3 * names


def test_claims_added_next_to_many_existing_ones_are_linear() -> None:
    """Each new container claim was compared with every entry already in resources.claims."""
    existing = 2000
    comparisons = 0

    class CountedName(str):
        __slots__ = ()

        def __eq__(self, other: object) -> bool:
            nonlocal comparisons
            comparisons += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    pod = accel_pod(8, existing_claims=existing)
    for claim in pod["spec"]["containers"][0]["resources"]["claims"]:
        claim["name"] = CountedName(claim["name"])  # the engine copies containers, not strings
    result = convert(pod, CONFIG)
    assert result.object is not None
    assert len(result.object["spec"]["containers"][0]["resources"]["claims"]) == existing + 8
    # Quadratic before: one comparison per existing entry per new claim (8 x 2000).
    assert comparisons <= existing
