"""The structural diff that both editors apply."""

from __future__ import annotations

import math

import pytest

from dra_migrate.translator.yamltext.diff import AddKeys, AppendItems, RemoveItems, RemoveKey, Replace, diff, same


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, True, False),
        (1, 1.0, False),
        ({"a": [1]}, {"a": [1]}, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        (math.nan, math.nan, True),
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
    assert diff(old, new) == [
        RemoveKey((), "c"),
        Replace(("b", "x"), 2),
        AddKeys(("b",), (("w", 1),)),
        AddKeys((), (("z", 0),)),
    ]


def test_emptied_mapping_is_replaced_and_empty_stays_quiet() -> None:
    assert diff({"r": {"l": 1}}, {"r": {}}) == [Replace(("r",), {})]
    assert diff({"r": {}}, {"r": {}}) == []


def test_lists() -> None:
    assert diff([1, 2], [1, 2, 3]) == [AppendItems((), (3,))]
    assert diff([1, 2, 3], [1, 3]) == [RemoveItems((), (1,))]
    assert diff([{"a": 1}, 2], [{"a": 2}, 2, 5]) == [Replace((0, "a"), 2), AppendItems((), (5,))]
    assert diff([1, 2, 3], [4]) == [Replace((0,), 4), RemoveItems((), (1, 2))]
    assert diff([1], []) == [Replace((), [])]
    assert diff({"a": 1}, [1]) == [Replace((), [1])]
