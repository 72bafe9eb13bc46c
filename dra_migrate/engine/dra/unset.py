"""Kubernetes tests fields for non-zero values: "", null, [], {}, false and 0 all mean "not set"."""

from __future__ import annotations

from typing import Any


def is_unset(value: Any) -> bool:
    if value is None or value is False or value == "":
        return True
    if isinstance(value, (list, dict)):
        return not value
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def is_set(value: Any) -> bool:
    return not is_unset(value)
