"""What a run tells its user: a JSON report for pipelines, a summary table for people, a progress bar."""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from dra_migrate.engine import Finding
from dra_migrate.translator.pipeline import FileResult


@dataclass(slots=True)
class RunSummary:
    files: int = 0
    files_changed: int = 0
    files_skipped: int = 0
    files_failed: int = 0
    documents: int = 0
    documents_changed: int = 0
    templates: int = 0
    severities: Counter[str] = field(default_factory=Counter)

    def add(self, result: FileResult, templates: int) -> None:
        self.files += 1
        self.files_changed += result.changed
        self.files_skipped += result.skipped is not None
        self.files_failed += result.error is not None
        self.documents += len(result.documents)
        self.documents_changed += sum(d.status in ("changed", "dropped") for d in result.documents)
        self.templates += templates
        for document in result.documents:
            self.severities.update(str(f.severity) for f in document.findings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "filesChanged": self.files_changed,
            "filesSkipped": self.files_skipped,
            "filesFailed": self.files_failed,
            "documents": self.documents,
            "documentsChanged": self.documents_changed,
            "templatesGenerated": self.templates,
            "findings": dict(sorted(self.severities.items())),
        }


def run_entry(finding: Finding) -> dict[str, Any]:
    """A finding about the whole run (the target release, the schema used), reported once."""
    return {"file": None, "document": None, **finding.as_dict()}


def file_entries(result: FileResult) -> list[dict[str, Any]]:
    """One row per finding or change, flat, for jq and spreadsheets."""
    rows: list[dict[str, Any]] = []
    base = {"file": result.source.display}
    if result.error:
        rows.append(
            {**base, "document": None, "severity": "error", "rule": "parse", "path": "", "message": result.error}
        )
    if result.skipped:
        rows.append(
            {**base, "document": None, "severity": "info", "rule": "skipped", "path": "", "message": result.skipped}
        )
    for document in result.documents:
        where = {
            **base,
            "document": document.index,
            "kind": document.kind,
            "apiVersion": document.api_version,
            "namespace": document.namespace,
            "name": document.name,
            "status": document.status,
        }
        rows.extend({**where, **finding.as_dict()} for finding in document.findings)
    return rows


class JsonReport:
    def __init__(self, target: str) -> None:
        self.target = target
        self.rows: list[dict[str, Any]] = []

    def add(self, result: FileResult) -> None:
        self.rows.extend(file_entries(result))

    def add_rows(self, rows: list[dict[str, Any]]) -> None:
        self.rows.extend(rows)

    def dump(self, stream: TextIO, summary: RunSummary) -> None:
        json.dump({"targetVersion": self.target, "summary": summary.as_dict(), "findings": self.rows}, stream, indent=2)
        stream.write("\n")


def print_summary(stream: TextIO, summary: RunSummary, problems: list[dict[str, Any]]) -> None:
    """The human view: problems first (they need action), then the totals."""
    if problems:
        width = max(len(_file_label(p)) for p in problems)
        stream.write(f"{'FILE':<{width}}  DOC  SEVERITY  RULE / MESSAGE\n")
        for row in problems:
            document = "" if row.get("document") is None else str(row["document"])
            stream.write(
                f"{_file_label(row):<{width}}  {document:>3}  {row['severity']:<8}  {row['rule']}: {row['message']}\n"
            )
            if row.get("path"):
                stream.write(f"{'':<{width}}  {'':>3}  {'':<8}  at {row['path']}\n")
    data = summary.as_dict()
    stream.write(
        f"{data['files']} files ({data['filesChanged']} changed, {data['filesSkipped']} skipped, "
        f"{data['filesFailed']} failed), {data['documents']} documents ({data['documentsChanged']} changed), "
        f"{data['templatesGenerated']} ResourceClaimTemplates; findings: "
        + (", ".join(f"{n} {s}" for s, n in data["findings"].items()) or "none")
        + "\n"
    )


def _file_label(row: dict[str, Any]) -> str:
    return "(run)" if row["file"] is None else str(row["file"])


class Progress:
    """A one-line bar on a terminal for large trees; nothing at all when stderr is a pipe."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, threshold: int = 50) -> None:
        self.total = total
        self.stream = stream
        self.enabled = total >= threshold and stream.isatty()
        self.done = 0

    def step(self, label: str) -> None:
        if not self.enabled:
            return
        self.done += 1
        filled = int(30 * self.done / self.total)
        self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {label[-40:]:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 80 + "\r")
            self.stream.flush()
