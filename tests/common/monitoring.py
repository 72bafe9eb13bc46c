"""promtool and the monitoring files of deploy/monitoring, for the tests that check them.

promtool is found via $PROMTOOL, then PATH, then the cache of tests/deploy/build-promtool.sh
(${DRA_MIGRATE_CACHE:-~/.cache/dra-migrate}/promtool-v*/promtool). A missing promtool skips the
tests that need it, except with CI=true, where it fails them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
MONITORING_DIR = REPO_ROOT / "deploy" / "monitoring"
PROMETHEUS_RULE = MONITORING_DIR / "prometheusrule.yaml"
RULES_TEST = MONITORING_DIR / "prometheusrule.test.yaml"
DASHBOARD = MONITORING_DIR / "dashboard.json"
BUILD_PROMTOOL = REPO_ROOT / "tests" / "deploy" / "build-promtool.sh"


def _cache_root() -> Path:
    configured = os.environ.get("DRA_MIGRATE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "dra-migrate"


def find_promtool() -> Path | None:
    if configured := os.environ.get("PROMTOOL"):
        found = shutil.which(configured)
        if found is None:
            pytest.fail(f"PROMTOOL={configured!r} is not an executable file")
        return Path(found)
    if on_path := shutil.which("promtool"):
        return Path(on_path)
    builds = sorted(p for p in _cache_root().glob("promtool-v*/promtool") if os.access(p, os.X_OK))
    return builds[-1] if builds else None


def require_promtool() -> Path:
    found = find_promtool()
    if found is None:
        message = (
            f"promtool not found: set $PROMTOOL, put promtool on PATH, or build it with {BUILD_PROMTOOL} "
            f"(looked in {_cache_root()}/promtool-v*/promtool)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def run_promtool(promtool: Path, *args: str, stdin: str | None = None, cwd: Path | None = None) -> str:
    """promtool's output; fails the test with it when promtool exits non-zero."""
    done = subprocess.run(
        [str(promtool), *args], input=stdin, capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"promtool {' '.join(args)} failed ({done.returncode}):\n{output}"
    return output


def rule_file(prometheus_rule: dict[str, Any]) -> str:
    """The Prometheus rule file a PrometheusRule holds: its spec."""
    return yaml.safe_dump(prometheus_rule["spec"], sort_keys=False)


def write_rules_beside_test(directory: Path) -> Path:
    """rules.yaml (the spec of deploy/monitoring/prometheusrule.yaml) and a copy of its promtool
    unit-test file in `directory`, as the test file names it; returns the test file's path."""
    test_file = directory / RULES_TEST.name
    shutil.copyfile(RULES_TEST, test_file)
    (test_file.parent / "rules.yaml").write_text(rule_file(yaml.safe_load(PROMETHEUS_RULE.read_text())))
    return test_file


def dashboard_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query of a Grafana dashboard: panel targets and query variables."""
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            yield f"panel {panel.get('title')!r} target {target.get('refId')}", str(target["expr"])
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]
            yield f"variable {variable['name']!r}", str(query["query"] if isinstance(query, dict) else query)


_GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
_LABEL_VALUES = re.compile(r"^label_values\((.*),\s*\w+\)$", re.DOTALL)


def as_promql(query: str) -> str:
    """The PromQL Prometheus receives for a dashboard query: Grafana's interval variables replaced,
    `label_values(selector, label)` reduced to its selector, other $variables left in label values."""
    for variable, value in _GRAFANA_VARIABLES.items():
        query = query.replace(variable, value)
    found = _LABEL_VALUES.match(query.strip())
    return found.group(1) if found else query


# PromQL words that are not metric names (functions are recognised by the "(" after them).
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
    | {"inf", "nan"}
)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")


def metric_names(promql: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions, keywords,
    grouping labels, label matchers, strings, durations or numbers."""
    text = _STRINGS.sub('""', promql)
    text = _BRACES.sub("", text)
    text = _BRACKETS.sub("", text)
    text = _GROUPING.sub("", text)
    names = set()
    for found in _IDENTIFIER.finditer(text):
        name, call = found.group(1), found.group(2)
        if not call and name.lower() not in _KEYWORDS:
            names.add(name)
    return names


def load_dashboard() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard
