"""A conversion's change set (engine/changes.py), from which the webhook's JSON Patch and the
translator's text edit are built."""

from __future__ import annotations

import math

import pytest

from dra_migrate.engine import AddKeys, AppendItems, RemoveItems, RemoveKey, Replace, changes, same


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, True, False),
        (1, 1.0, False),
        ({"a": [1]}, {"a": [1]}, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        (math.nan, math.nan, True),
        (-0.0, 0.0, False),
        ([-0.0], [0.0], False),
        ([1], (1,), True),
        ("1", 1, False),
        ({}, [], False),
    ],
)
def test_same_tells_yaml_types_apart(a: object, b: object, equal: bool) -> None:
    assert same(a, b) is equal


def test_dict_ops_in_order() -> None:
    old = {"a": 1, "b": {"x": 1, "y": 2}, "c": 3}
    new = {"z": 0, "a": 1, "b": {"x": 2, "y": 2, "w": 1}}
    assert changes(old, new) == [
        RemoveKey((), "c"),
        Replace(("b", "x"), 2),
        AddKeys(("b",), (("w", 1),)),
        AddKeys((), (("z", 0),)),
    ]


def test_emptied_mapping_is_replaced_and_empty_stays_quiet() -> None:
    assert changes({"r": {"l": 1}}, {"r": {}}) == [Replace(("r",), {})]
    assert changes({"r": {}}, {"r": {}}) == []


def test_lists() -> None:
    assert changes([1, 2], [1, 2, 3]) == [AppendItems((), (3,))]
    assert changes([1, 2, 3], [1, 3]) == [RemoveItems((), (1,))]
    assert changes([{"a": 1}, 2], [{"a": 2}, 2, 5]) == [Replace((0, "a"), 2), AppendItems((), (5,))]
    assert changes([1, 2, 3], [4]) == [Replace((0,), 4), RemoveItems((), (1, 2))]
    assert changes([1], []) == [Replace((), [])]
    assert changes({"a": 1}, [1]) == [Replace((), [1])]


@pytest.mark.parametrize(
    ("old", "new"),
    [({"x": 0.0}, {"x": -0.0}), ([-0.0], [0.0, -0.0]), ({"x": [0.0]}, {"x": [-0.0]}), ({"x": [1, 0.0]}, {"x": [-0.0]})],
)
def test_negative_zero_is_a_change(old: object, new: object) -> None:
    assert changes(old, new), "-0.0 and 0.0 are written apart"
