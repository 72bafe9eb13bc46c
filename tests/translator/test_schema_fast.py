"""The compiled schema predicate agrees with jsonschema, and validate_object with kubernetes-validate.

Objects are the corpus's manifests, their conversions and the templates the engine generates, then
mutated at random (fields dropped, unknown fields added, values replaced by other types, enum
values changed), for 1.32 (v1beta1), 1.33 (v1beta2) and 1.34 (v1) schemas.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes_validate import utils as kv_utils

from dra_migrate.engine import Target, convert, default_config
from dra_migrate.manifests.schema import kind_schema, schema_dir, validate_object
from dra_migrate.manifests.schemafast import Compiler

TARGETS = ("1.32", "1.33", "1.34")


@functools.cache
def _objects(corpus: Path) -> tuple[tuple[str, dict[str, Any]], ...]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((corpus / "legacy").glob("*.y*ml")) + sorted((corpus / "dra-versions").rglob("*.y*ml")):
        try:
            documents = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))
        except yaml.YAMLError:
            continue
        for document in documents:
            if not (isinstance(document, dict) and isinstance(document.get("kind"), str) and "apiVersion" in document):
                continue
            for target in TARGETS:
                result = convert(document, default_config(target))
                for obj in (document, result.object, *result.templates):
                    if isinstance(obj, dict) and "apiVersion" in obj:
                        found.append((target, obj))
    return tuple(found)


_replacements: st.SearchStrategy[Any] = st.sampled_from(
    [None, 1, 1.0, 1.5, True, False, "x", "", [], {}, ["a"], [None], [{}], {"a": 1}, {1: "a"}, {"a": None}, -3, 2.0]
)


def _mutate(value: Any, steps: list[tuple[int, Any, int]]) -> Any:
    value = copy.deepcopy(value)
    for pick, drawn, action in steps:
        # a fresh copy: the drawn value is shared between draws, and inserting one instance twice
        # could nest it inside itself (the walk below would never end)
        replacement = copy.deepcopy(drawn)
        containers: list[Any] = []
        stack = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, dict | list):
                containers.append(node)
                stack.extend(node.values() if isinstance(node, dict) else node)
        node = containers[pick % len(containers)]
        if isinstance(node, dict) and node:
            key = sorted(node, key=str)[pick % len(node)]
            if action == 0:
                del node[key]
            elif action == 1:
                node[key] = replacement
            else:
                node[f"unknown{pick}"] = replacement
        elif isinstance(node, list) and node:
            node[pick % len(node)] = replacement
    return value


@pytest.mark.parametrize("strict", [True, False])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pick=st.integers(0, 10_000),
    steps=st.lists(st.tuples(st.integers(0, 10_000), _replacements, st.integers(0, 2)), max_size=3),
)
def test_the_compiled_predicate_agrees_with_jsonschema(
    corpus: Path, strict: bool, pick: int, steps: list[tuple[int, Any, int]]
) -> None:
    objects = _objects(corpus)
    target, original = objects[pick % len(objects)]
    obj = _mutate(original, steps)
    if not isinstance(obj.get("kind"), str) or not isinstance(obj.get("apiVersion"), str):
        return
    schema = kind_schema(schema_dir(Target.parse(target).schema_version, strict), obj["kind"], obj["apiVersion"])
    if schema is None:
        return
    assert schema.fast is not None, f"{obj['kind']} {obj['apiVersion']}: schema not compiled"
    expected = schema.full.is_valid(obj)
    event(f"valid: {expected}")
    assert schema.fast(obj) is expected


def test_results_are_kubernetes_validates_word_for_word(corpus: Path) -> None:
    objects = _objects(corpus)
    for index, (target, original) in enumerate(objects[::29]):
        obj = _mutate(original, [(index, "x", index % 3)]) if index % 2 else original
        if not isinstance(obj.get("kind"), str) or not isinstance(obj.get("apiVersion"), str):
            continue
        ours = validate_object(obj, Target.parse(target))
        try:
            kubernetes_validate.validate(obj, Target.parse(target).schema_version, strict=True)
            theirs: tuple[bool, tuple[str, ...]] = (True, ())
        except kv_utils.SchemaNotFoundError:
            theirs = (False, ())
        except kv_utils.ValidationError as exc:
            theirs = (True, (f"{'.'.join(str(p) for p in exc.path) or '(top level)'}: {exc.message}",))
        assert (ours.checked, ours.errors) == theirs


# Schemas of every shape the compiler takes, in combinations the Kubernetes schemas do not use
# (`items` with object keywords, `required` without `type`, ...), with a recursive definition.
_DEFINITIONS = {
    "Text": {"type": ["string", "null"]},
    "Tree": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Tree"}, "n": {"type": "integer"}}},
}
_TYPE_NAMES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
_TYPES = st.one_of(_TYPE_NAMES, st.lists(_TYPE_NAMES, min_size=1, max_size=3, unique=True))
_NAMES = st.sampled_from(["a", "b", "c"])
_LEAF_SCHEMAS = st.one_of(
    st.just({}),
    st.booleans(),
    st.builds(lambda t: {"type": t, "description": "d"}, _TYPES),
    st.builds(lambda e: {"enum": e}, st.lists(st.sampled_from(["x", "y", ""]), min_size=1, unique=True)),
    st.sampled_from([{"$ref": "#/$defs/Text"}, {"$ref": "#/$defs/Tree"}, {"x-kubernetes-int-or-string": True}]),
)


def _with_type(schema: dict[str, Any], types: Any) -> dict[str, Any]:
    return schema if types is None else {**schema, "type": types}


_SCHEMAS = st.recursive(
    _LEAF_SCHEMAS,
    lambda inner: st.one_of(
        st.builds(
            lambda p, a, r, t: _with_type({"properties": p, "additionalProperties": a, "required": r}, t),
            st.dictionaries(_NAMES, inner, max_size=3),
            st.one_of(st.booleans(), inner),
            st.lists(_NAMES, max_size=2, unique=True),
            st.none() | _TYPES,
        ),
        st.builds(lambda i, t: _with_type({"items": i}, t), inner, st.none() | _TYPES),
        st.builds(lambda o: {"oneOf": o}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda r, i: {"required": r, "items": i}, st.lists(_NAMES, max_size=2), inner),
        st.builds(
            lambda p, i, t: _with_type({"properties": p, "items": i}, t), st.dictionaries(_NAMES, inner), inner, _TYPES
        ),
    ),
    max_leaves=8,
)
_INSTANCES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-2, 2),
        st.sampled_from([1.0, 1.5, -0.0, 1e20]),
        st.sampled_from(["x", "y", "", "z"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(_NAMES, st.sampled_from(["child", "n", 1])), inner, max_size=3),
    ),
    max_leaves=10,
)


@settings(max_examples=2000, deadline=None)
@given(schema=_SCHEMAS, instance=_INSTANCES)
def test_the_compiler_agrees_with_jsonschema_on_any_schema_it_takes(schema: Any, instance: Any) -> None:
    check = Compiler({"$defs": _DEFINITIONS}).compile(schema)
    root = {**schema, "$defs": _DEFINITIONS} if isinstance(schema, dict) else schema
    expected = jsonschema.Draft202012Validator(root).is_valid(instance)
    event(f"valid: {expected}")
    assert check(instance) is expected
