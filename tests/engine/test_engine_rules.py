"""Finding rules: one declaration each (id, severity, meaning), used as declared; tests/docs checks their table."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from dra_migrate.engine import RULES, Finding, Severity

ROOT = Path(__file__).resolve().parents[2]
METHODS = {"info": Severity.INFO, "warning": Severity.WARNING, "error": Severity.ERROR}


def rules_used() -> Iterator[tuple[str, Severity, str]]:
    """(rule, severity, where) for every finding the package makes with a literal rule id."""
    for path in sorted((ROOT / "dra_migrate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            func = node.func
            receiver = func.value if isinstance(func, ast.Attribute) else None
            named = getattr(receiver, "id", None) or getattr(receiver, "attr", None)
            if isinstance(func, ast.Attribute) and func.attr in METHODS and node.args and named == "findings":
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str) and len(node.args) == 3:
                    yield first.value, METHODS[func.attr], where
            elif isinstance(func, ast.Name) and func.id == "Finding" and len(node.args) >= 2:
                severity, rule = node.args[0], node.args[1]
                if isinstance(rule, ast.Constant) and isinstance(severity, ast.Attribute):
                    yield str(rule.value), Severity[severity.attr], where


def test_rule_ids_are_unique() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))


def test_every_rule_used_is_declared_with_its_severity() -> None:
    declared = {rule.id: rule.severity for rule in RULES}
    used = list(rules_used())
    assert len(used) > 40
    for rule, severity, where in used:
        assert rule in declared, f"{where}: rule {rule!r} is not declared"
        assert declared[rule] is severity, f"{where}: {rule!r} used as {severity}, declared {declared[rule]}"


def test_every_declared_rule_is_used() -> None:
    used = {rule for rule, _, _ in rules_used()}
    assert [rule.id for rule in RULES if rule.id not in used] == []


def test_a_finding_refuses_an_undeclared_rule_or_another_severity() -> None:
    with pytest.raises(ValueError, match="not declared"):
        Finding(Severity.ERROR, "made-up-rule", "", "")
    with pytest.raises(ValueError, match="declared as error"):
        Finding(Severity.INFO, "schema", "", "")

