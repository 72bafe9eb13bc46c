"""Bounded memoisation for pure functions whose arguments are usually, but not always, hashable,
and for pure functions of parsed manifest values (which are not)."""

from __future__ import annotations

import functools
import marshal
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def cached_when_hashable(maxsize: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """An LRU cache of `maxsize` entries; calls with an unhashable argument (a spec whose opaque
    config holds dicts, say) are computed each time instead."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        cached: Callable[..., R] = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return cached(*args, **kwargs)
            except TypeError:  # unhashable argument: not cacheable
                return function(*args, **kwargs)

        return call

    return decorate


def cached_by_marshal(maxsize: int) -> Callable[[Callable[[Any], R]], Callable[[Any], R]]:
    """An LRU cache of `maxsize` entries for a pure function of one parsed manifest value (dicts,
    lists, JSON's scalars), keyed by the value's exact marshal form: its types, values and key
    order, all such a function can read. A value marshal does not know (a YAML timestamp, a str
    subclass) is computed each time."""

    def decorate(function: Callable[[Any], R]) -> Callable[[Any], R]:
        @functools.lru_cache(maxsize=maxsize)
        def from_key(key: bytes) -> R:
            return function(marshal.loads(key))

        @functools.wraps(function)
        def call(value: Any) -> R:
            try:
                key = marshal.dumps(value)
            except ValueError:  # not a plain value: not cacheable
                return function(value)
            return from_key(key)

        return call

    return decorate
