"""Kubernetes tests fields for non-zero values: "", null, [], {}, false and 0 all mean "not set"."""

from __future__ import annotations

from typing import Any


def is_unset(value: Any) -> bool:
    if isinstance(value, (dict, list, str)):
        return not value
    return value is None or value is False or (type(value) in (int, float) and value == 0)


def is_set(value: Any) -> bool:
    return not is_unset(value)
