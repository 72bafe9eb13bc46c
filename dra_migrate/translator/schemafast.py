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
_REF = re.compile(r"(?:/api/_definitions\.json)?#/\$defs/([^/]+)")


class UnsupportedError(Exception):
    """A keyword or reference this compiler does not know: use jsonschema for this schema."""


def _valid(_: Any) -> bool:
    return True


def _invalid(_: Any) -> bool:
    return False


def _type_check(names: frozenset[str]) -> Check:
    """JSON Schema `type` with jsonschema's type checker (draft 2020-12)."""
    integer, number = "integer" in names, "number" in names

    def check(value: Any) -> bool:
        if value is None:
            return "null" in names
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
            if key in _ANNOTATIONS or key.startswith("x-kubernetes-") or key in ("properties", "additionalProperties"):
                continue
            if key == "type":
                checks.append(_type_check(frozenset([value] if isinstance(value, str) else value)))
            elif key == "required":
                checks.append(self._required(tuple(value)))
            elif key == "items":
                checks.append(self._items(self.compile(value)))
            elif key == "enum":
                checks.append(self._enum(value))
            elif key == "oneOf":
                checks.append(self._one_of([self.compile(s) for s in value]))
            elif key == "$ref":
                checks.append(self._ref(value))
            else:
                raise UnsupportedError(f"keyword {key!r}")
        if "properties" in schema or "additionalProperties" in schema:
            checks.append(self._object(schema.get("properties", {}), schema.get("additionalProperties", True)))
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

    def _object(self, properties: Mapping[str, Any], additional: Any) -> Check:
        compiled = {name: self.compile(schema) for name, schema in properties.items()}
        others = None if additional is True else self.compile(additional)
        closed = additional is False

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            for key, item in value.items():
                one = compiled.get(key) if isinstance(key, str) else None
                if one is not None:
                    if not one(item):
                        return False
                elif closed or (others is not None and not others(item)):
                    return False
            return True

        return check

    @staticmethod
    def _required(names: tuple[str, ...]) -> Check:
        def check(value: Any) -> bool:
            return not isinstance(value, dict) or all(name in value for name in names)

        return check

    @staticmethod
    def _items(item: Check) -> Check:
        def check(value: Any) -> bool:
            return not isinstance(value, list) or all(item(one) for one in value)

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
            return sum(1 for option in options if option(value)) == 1

        return check
