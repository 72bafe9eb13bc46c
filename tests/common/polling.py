"""Waiting for a condition in tests: one way to poll, with an error that says what was awaited."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import IO, Any, TypeVar

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


class ProcessExitedError(AssertionError):
    """The process awaited exited before the condition held."""


def wait_while_running(
    fetch: Callable[[], T | None],
    exited: Callable[[], int | None],
    *,
    what: str,
    log: Callable[[], str],
    timeout: float = DEFAULT_TIMEOUT_S,
    interval: float = 0.1,
) -> T:
    """`wait_for` on a process that may die first: fail as soon as `exited()` gives its exit code
    (a dead process never gets ready), and on timeout; either way with the process's `log()`."""

    def fetch_while_running() -> T | None:
        if (code := exited()) is not None:
            raise ProcessExitedError(f"exited with {code} while waiting for {what}:\n{log()}")
        return fetch()

    try:
        return wait_for(fetch_while_running, what=what, timeout=timeout, interval=interval)
    except ProcessExitedError:
        raise
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\n{log()}") from None


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    """Wait until `predicate()` is true, polling often (the processes under test answer in milliseconds)."""
    wait_for(predicate, what=what, timeout=timeout, interval=0.01)


def piped_output(process: subprocess.Popen[bytes]) -> str:
    """A process's piped stdout (else stderr) as `wait_while_running`'s log: read only once it
    exited, since reading a running process's pipe waits for its end."""
    pipe: IO[Any] | None = process.stdout or process.stderr
    if pipe is None or process.poll() is None:
        return "(still running)"
    return bytes(pipe.read()).decode(errors="replace")
