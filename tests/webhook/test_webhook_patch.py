"""The engine's change set as a JSON Patch (webhook/patch.py): the operations always turn the
original into exactly the converted object."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_migrate.engine import changes
from dra_migrate.webhook.patch import json_patch

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 1.0, 0.0, -0.0]), st.text("ab/~", max_size=3)
)
keys = st.text("ab/~0", min_size=0, max_size=3)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)
documents = st.dictionaries(keys, json_values, max_size=5)


def _exact(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _applied(src: dict[str, Any], dst: dict[str, Any]) -> dict[str, Any]:
    operations = json_patch(changes(src, dst))
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(src), operations)
    return result


@settings(max_examples=500, deadline=None)
@given(src=documents, dst=documents)
def test_unrelated_documents(src: dict[str, Any], dst: dict[str, Any]) -> None:
    assert _exact(_applied(src, dst)) == _exact(dst)


@st.composite
def edited(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A document and a copy with a few edits deep inside, like a conversion makes."""
    src = draw(documents)
    dst = copy.deepcopy(src)
    for _ in range(draw(st.integers(1, 4))):
        node: Any = dst
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
            if not isinstance(node[key], dict | list):
                break
            node = node[key]
        if isinstance(node, dict):
            node[draw(keys)] = draw(json_values)
            remove: bool = draw(st.booleans())
            if remove:
                del node[draw(st.sampled_from(sorted(node)))]
        elif isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(json_values))
    return src, dst


@settings(max_examples=500, deadline=None)
@given(pair=edited())
def test_edited_documents(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    src, dst = pair
    assert _exact(_applied(src, dst)) == _exact(dst)


def test_json_types_are_kept_apart() -> None:
    """1, 1.0 and True are equal in Python, not in JSON."""
    for old, new in ((1, True), (1, 1.0), (0, False), ([1], [True]), ({"a": 1}, {"a": 1.0})):
        assert _exact(_applied({"x": old}, {"x": new})) == _exact({"x": new})


def test_unchanged_parts_get_no_operations() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "env": [1, 2]}], "volumes": [{}]},
    }
    converted = copy.deepcopy(pod)
    converted["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    assert json_patch(changes(pod, converted)) == [
        {"op": "add", "path": "/spec/containers/0/resources", "value": {"claims": [{"name": "gpu"}]}}
    ]
