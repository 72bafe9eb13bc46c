"""dump_json_like mirrors the original JSON's indentation, separators and final newline."""

from __future__ import annotations

import json

import pytest

from dra_migrate.manifests.yamltext import dump_json_like

NEW = {"kind": "Pod", "spec": {"containers": [{"name": "a", "resources": {"claims": [{"name": "gpu"}]}}]}}


@pytest.mark.parametrize("indent", [2, 4, "\t"])
@pytest.mark.parametrize("ending", ["\n", "", "\r\n"])
def test_indented_json(indent: int | str, ending: str) -> None:
    original = json.dumps({"spec": {"x": [1]}}, indent=indent).replace("\n", ending or "\n") + ending
    out = dump_json_like(original, NEW)
    assert json.loads(out) == NEW
    expected = json.dumps(NEW, indent=indent)
    if ending == "\r\n":
        expected = expected.replace("\n", "\r\n")
    assert out == expected + ending


def test_compact_json_keeps_separators() -> None:
    assert dump_json_like('{"a":1,"b":[1,2]}', {"b": [3], "a": 2}) == '{"b":[3],"a":2}'
    assert dump_json_like('{"a": 1, "b": 2}\n', {"b": 3}) == '{"b": 3}\n'


def test_non_ascii_follows_the_original() -> None:
    assert dump_json_like('{"a": "é"}', {"a": "ü"}) == '{"a": "ü"}'
    assert dump_json_like('{"a": "\\u00e9"}', {"a": "ü"}) == '{"a": "\\u00fc"}'


def test_key_order_follows_new() -> None:
    out = dump_json_like('{\n  "a": 1,\n  "b": 2\n}\n', {"b": 2, "a": 1, "c": 3})
    assert out == '{\n  "b": 2,\n  "a": 1,\n  "c": 3\n}\n'
