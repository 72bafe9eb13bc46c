"""SARIF 2.1.0 for GitHub code scanning: one run, every declared rule, one result per finding in a file.

A result's artifactLocation is the file's path relative to the working directory (%SRCROOT%, run
from the repository's root), or a file: URI for a file outside it. Findings about the whole run,
and about stdin, have no place in a file: they are the invocation's notifications.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from dra_migrate.engine import RULES
from dra_migrate.translator.results.formats.rows import description, in_file, where

if TYPE_CHECKING:
    from dra_migrate.translator.results.report import FindingRows, RunSummary

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
ROOT = "%SRCROOT%"


def _version() -> str:
    import dra_migrate

    return str(dra_migrate.__version__)


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.id,
            "shortDescription": {"text": rule.meaning},
            "defaultConfiguration": {"level": LEVELS[str(rule.severity)]},
            "properties": {"severity": str(rule.severity)},
        }
        for rule in RULES
    ]


def artifact_location(file: str) -> dict[str, str]:
    path = PurePath(file)
    if path.is_absolute():
        return {"uri": Path(file).as_uri()}
    return {"uri": quote(path.as_posix()), "uriBaseId": ROOT}


def sarif_log(found: FindingRows, summary: RunSummary) -> dict[str, Any]:
    index = {rule.id: position for position, rule in enumerate(RULES)}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for row in found.rows:
        level = LEVELS[row["severity"]]
        rule = {"id": row["rule"], "index": index[row["rule"]]}
        if not in_file(row):
            text = description(row) if row.get("file") is None else f"{where(row)}: {description(row)}"
            notifications.append({"level": level, "message": {"text": text}, "associatedRule": rule})
            continue
        location = {"artifactLocation": artifact_location(row["file"]), "region": {"startLine": row.get("line") or 1}}
        results.append(
            {
                "ruleId": row["rule"],
                "ruleIndex": rule["index"],
                "level": level,
                "message": {"text": description(row)},
                "locations": [{"physicalLocation": location}],
            }
        )
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "dra-migrate",
                "version": _version(),
                "rules": _rules(),
            }
        },
        "originalUriBaseIds": {ROOT: {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        "results": results,
        "properties": {"targetVersion": found.target, "summary": summary.as_dict()},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def write_sarif(found: FindingRows, summary: RunSummary, stream: TextIO) -> None:
    json.dump(sarif_log(found, summary), stream, indent=2)
    stream.write("\n")
