"""Types shared by the translator tests (a module of its own: conftest modules are not importable)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


Runner = Callable[..., CliResult]
