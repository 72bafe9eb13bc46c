"""The engine's work grows linearly with the claims it makes (no timing: steps are counted).

A pattern mapping can match any number of names, and the names of one container's claims share
one base (`<container>-<request>`), so every per-claim step that rescans earlier claims made a
pod with n mapped names cost n squared steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dra_migrate.engine import DeviceRequestSpec, convert, parse_config
from dra_migrate.engine import names as engine_names

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


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> Callable[[], int]:
    calls = 0
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return lambda: calls


@pytest.mark.parametrize("names", [100, 400])
def test_claim_naming_and_grouping_are_linear(monkeypatch: pytest.MonkeyPatch, names: int) -> None:
    labels = counting(monkeypatch, engine_names, "to_label")
    identities = counting(monkeypatch, DeviceRequestSpec, "identity")
    result = convert(accel_pod(names), CONFIG)
    claims = result.object["spec"]["resourceClaims"] if result.object else []
    assert len(claims) == len({claim["name"] for claim in claims}) == names
    # Quadratic before: about names**2 / 2 of each.
    assert labels() <= 3 * names
    assert identities() <= 3 * names


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
