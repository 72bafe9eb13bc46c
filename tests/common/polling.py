"""Waiting for a condition in tests: one way to poll, with an error that says what was awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0


def wait_for(
    fetch: Callable[[], T | None], *, what: str, timeout: float = DEFAULT_TIMEOUT_S, interval: float = 0.25
) -> T:
    """Return the first truthy value of `fetch()`; fail with `what` and the last value on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        last = fetch()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last value: {last!r}")
        time.sleep(interval)


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    """Wait until `predicate()` is true, polling often (the processes under test answer in milliseconds)."""
    wait_for(predicate, what=what, timeout=timeout, interval=0.01)
