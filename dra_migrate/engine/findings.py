"""What the engine tells its callers about a conversion: findings with a severity and a JSON path."""

from __future__ import annotations

import re
from typing import NamedTuple

from dra_migrate.engine.rules import check_rule
from dra_migrate.engine.severity import Severity

PathParts = tuple[str | int, ...]  # a JSON path as keys and list indexes

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


class _FindingFields(NamedTuple):
    severity: Severity
    rule: str
    path: str
    message: str


class Finding(_FindingFields):
    """One finding; its rule must be declared in engine.rules with this severity (else ValueError)."""

    __slots__ = ()

    def __new__(cls, severity: Severity, rule: str, path: str, message: str) -> Finding:
        check_rule(rule, severity)
        return super().__new__(cls, severity, rule, path, message)

    def as_dict(self) -> dict[str, str]:
        return {"severity": str(self.severity), "rule": self.rule, "path": self.path, "message": self.message}


def json_path(*parts: str | int) -> str:
    """Render a path like `spec.containers[0].resources.limits["nvidia.com/gpu"]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


class Findings:
    """Collects findings for one object; the rule modules share one collector per conversion."""

    def __init__(self) -> None:
        self.items: list[Finding] = []

    def add(self, severity: Severity, rule: str, path: str, message: str) -> None:
        self.items.append(Finding(severity, rule, path, message))

    def info(self, rule: str, path: str, message: str) -> None:
        self.add(Severity.INFO, rule, path, message)

    def warning(self, rule: str, path: str, message: str) -> None:
        self.add(Severity.WARNING, rule, path, message)

    def error(self, rule: str, path: str, message: str) -> None:
        self.add(Severity.ERROR, rule, path, message)

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.items)
