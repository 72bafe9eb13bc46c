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

import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes_validate import utils as kv_utils

from dra_migrate.engine import Target, convert, default_config
from dra_migrate.translator.schema import kind_schema, schema_dir, validate_object

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


_replacements = st.sampled_from([None, 1, 1.0, 1.5, True, "x", "", [], {}, ["a"], {"a": 1}, -3])


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
