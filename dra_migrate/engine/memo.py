"""Bounded memoisation for pure functions whose arguments are usually, but not always, hashable."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

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
