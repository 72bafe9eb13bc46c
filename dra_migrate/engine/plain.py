"""Copies of parsed manifests: only dicts and lists are containers there, so copy just those.

Several times faster than copy.deepcopy on a pod, which matters on the webhook's hot path. Scalars
(str, int, float, bool, None, and YAML timestamps) are immutable.
"""

from __future__ import annotations

import marshal
from typing import Any, TypeVar, cast

T = TypeVar("T")


def plain_copy(value: T) -> T:
    """A copy whose dicts and lists are new; marshal's round trip (C) when the value holds only
    exact built-in types (JSON's), which keeps every type, value and key order."""
    try:
        parsed: Any = value
        return cast(T, marshal.loads(marshal.dumps(parsed)))
    except ValueError:  # a type marshal does not know (a YAML timestamp, a str subclass)
        return _walk_copy(value)


def _walk_copy(value: T) -> T:
    if isinstance(value, dict):
        return {key: _walk_copy(item) for key, item in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [_walk_copy(item) for item in value]  # type: ignore[return-value]
    return value
