"""Compile a Kubernetes OpenAPI JSON Schema into a plain Python predicate: valid or not, fast.

The schemas kubernetes-validate ships use a small part of JSON Schema 2020-12: `type`,
`properties`, `additionalProperties`, `required`, `items`, `enum` (of strings), `oneOf` and
`$ref` into `_definitions.json`, plus annotations. This compiles exactly that, with jsonschema's
semantics (an integral float is an integer, a bool is neither integer nor number, object
keywords apply to dicts only, ...), and raises UnsupportedError for anything else, so the caller
keeps using jsonschema there. The predicate only says whether an object is valid; the caller
asks jsonschema for the message of an invalid one, so reports stay word for word the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "format", "$schema", "$id", "$defs", "title", "default", "example"})
# Keywords compiled together into one check of a value's shape (Compiler._shape).
_SHAPE = frozenset({"type", "properties", "additionalProperties", "required", "items"})
_REF = re.compile(r"(?:/api/_definitions\.json)?#/\$defs/([^/]+)")


class UnsupportedError(Exception):
    """A keyword or reference this compiler does not know: use jsonschema for this schema."""


def _valid(_: Any) -> bool:
    return True


def _invalid(_: Any) -> bool:
    return False


def _type_check(names: frozenset[str]) -> Check:
    """JSON Schema `type` with jsonschema's type checker (draft 2020-12)."""
    null, integer, number = "null" in names, "integer" in names, "number" in names
    if names == {"string", "null"}:  # the most common type, as one test
        return lambda value: value is None or isinstance(value, str)
    if names == {"string"}:
        return lambda value: isinstance(value, str)

    def check(value: Any) -> bool:
        if value is None:
            return null
        if value is True or value is False:
            return "boolean" in names
        if isinstance(value, str):
            return "string" in names
        if isinstance(value, int):
            return integer or number
        if isinstance(value, float):
            return number or (integer and value.is_integer())
        if isinstance(value, dict):
            return "object" in names
        if isinstance(value, list):
            return "array" in names
        return False

    return check


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _valid
    if len(checks) == 1:
        return checks[0]
    all_checks = tuple(checks)

    def check(value: Any) -> bool:
        for one in all_checks:  # noqa: SIM110 (a loop: faster than all() over a generator here)
            if not one(value):
                return False
        return True

    return check


class Compiler:
    """Compiles schemas that share one `_definitions.json`; each definition is compiled once."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions: Mapping[str, Any] = definitions.get("$defs", {})
        self._compiled: dict[str, Check] = {}

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return _valid
        if schema is False:
            return _invalid
        if not isinstance(schema, dict):
            raise UnsupportedError(f"schema of type {type(schema).__name__}")
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or key.startswith("x-kubernetes-") or key in _SHAPE:
                continue
            if key == "enum":
                checks.append(self._enum(value))
            elif key == "oneOf":
                checks.append(self._one_of([self.compile(s) for s in value]))
            elif key == "$ref":
                checks.append(self._ref(value))
            else:
                raise UnsupportedError(f"keyword {key!r}")
        shape = self._shape(schema)
        return _all_of(checks if shape is None else [shape, *checks])

    def _shape(self, schema: dict[str, Any]) -> Check | None:
        """`type` and the keywords that apply to objects or to arrays, as one check.

        A value of another type passes those keywords, so only `type` decides for it: the
        object and array checks test `type` themselves.
        """
        typed = names = None
        if "type" in schema:
            value = schema["type"]
            names = frozenset([value] if isinstance(value, str) else value)
            typed = _type_check(names)
        shaped: list[Check] = []
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            shaped.append(
                self._object(
                    schema.get("properties", {}),
                    schema.get("additionalProperties", True),
                    tuple(schema.get("required", ())),
                    typed,
                    names is None or "object" in names,
                )
            )
        if "items" in schema:
            item = self.compile(schema["items"])
            # with object keywords too, `type` is already checked by the object check
            shaped.append(
                self._items(item, None, True) if shaped else self._items(item, typed, names is None or "array" in names)
            )
        if shaped:
            return _all_of(shaped)
        return typed

    def _ref(self, ref: str) -> Check:
        found = _REF.fullmatch(ref)
        if found is None or found.group(1) not in self._definitions:
            raise UnsupportedError(f"$ref {ref!r}")
        name = found.group(1)
        if name not in self._compiled:
            # Definitions can be recursive (JSONSchemaProps): refer to the compiled check lazily.
            slot: list[Check] = []
            self._compiled[name] = lambda value: slot[0](value)
            slot.append(self.compile(self._definitions[name]))
            self._compiled[name] = slot[0]
        return self._compiled[name]

    def _object(
        self,
        properties: Mapping[str, Any],
        additional: Any,
        required: tuple[str, ...],
        typed: Check | None,
        object_allowed: bool,
    ) -> Check:
        """`properties`, `additionalProperties` and `required` (which apply to dicts only), and `type`."""
        compiled = {name: self.compile(schema) for name, schema in properties.items()}
        names = frozenset(compiled)
        checked = {name: one for name, one in compiled.items() if one is not _valid}
        closed = additional is False
        others = None if additional is True or closed else self.compile(additional)
        needed = frozenset(required)

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return typed is None or typed(value)
            keys = value.keys()
            if not object_allowed or not keys >= needed or (closed and not keys <= names):
                return False
            for key, item in value.items():
                one = checked.get(key)
                if one is not None:
                    if not one(item):
                        return False
                elif others is not None and key not in names and not others(item):
                    return False
            return True

        return check

    @staticmethod
    def _items(item: Check, typed: Check | None, array_allowed: bool) -> Check:
        """`items` (which applies to lists only) and `type`."""

        def check(value: Any) -> bool:
            if not isinstance(value, list):
                return typed is None or typed(value)
            if not array_allowed:
                return False
            for one in value:  # noqa: SIM110 (a loop: faster than all() over a generator here)
                if not item(one):
                    return False
            return True

        return check

    @staticmethod
    def _enum(values: list[Any]) -> Check:
        if not all(isinstance(v, str) for v in values):
            raise UnsupportedError("enum with values other than strings")
        allowed = frozenset(values)

        def check(value: Any) -> bool:
            return isinstance(value, str) and value in allowed

        return check

    @staticmethod
    def _one_of(options: list[Check]) -> Check:
        def check(value: Any) -> bool:
            matched = 0
            for option in options:
                if option(value):
                    matched += 1
            return matched == 1

        return check
