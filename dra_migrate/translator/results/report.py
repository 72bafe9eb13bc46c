"""What a run tells its user: reports for machines (JSON, SARIF, JUnit, GitHub annotations, Markdown;
translator.results.formats), a grouped text report for people, a one-line summary that is always printed,
and a progress bar for large trees on a terminal."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from typing import Any, TextIO

from dra_migrate.engine import Finding, Severity
from dra_migrate.translator.conversion.pipeline import FileResult
from dra_migrate.translator.results.locate import document_line, field_lines

WIDTH = 100  # the text report stays readable in a 100-column terminal
PROGRESS_THRESHOLD = 200  # files; smaller trees finish before a bar would help


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org) or TERM is dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m", "bold": "\033[1m"}
_RESET = "\033[0m"


def paint(text: str, colour: str, enabled: bool) -> str:
    return f"{_COLOURS[colour]}{text}{_RESET}" if enabled else text


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class RunSummary:
    __slots__ = (
        "_files",
        "documents",
        "documents_changed",
        "files_with_errors",
        "severities",
        "templates",
        "unverified",
    )

    def __init__(self) -> None:
        # file -> (changed, skipped, failed: could not be read or parsed at all), as it ended: a
        # kustomization the run edits is also an input (skipped: no objects), and is one file, its edit
        self._files: dict[str, tuple[bool, bool, bool]] = {}
        self.files_with_errors = 0  # failed, or something in them could not be converted
        self.documents = 0
        self.documents_changed = 0
        self.templates = 0
        self.severities: Counter[str] = Counter()
        self.unverified = 0  # kustomization roots written without render verification (--no-verify-render)

    def add(self, result: FileResult, templates: int) -> None:
        self._files[result.source.display] = (result.changed, result.skipped is not None, result.error is not None)
        self.files_with_errors += result.has_errors
        self.documents += len(result.documents)
        self.documents_changed += sum(d.status in ("changed", "dropped") for d in result.documents)
        self.templates += templates
        if result.error is not None:
            self.severities["error"] += 1
        self.severities.update(str(f.severity) for f in result.file_findings)
        for document in result.documents:
            self.severities.update(str(f.severity) for f in document.findings)

    def unchanged(self, result: FileResult) -> None:
        """A changed file that was not written after all: it stays as it was."""
        counted = self._files.get(result.source.display)
        if counted is not None:
            self._files[result.source.display] = (False, counted[1], counted[2])

    @property
    def files(self) -> int:
        return len(self._files)

    @property
    def files_changed(self) -> int:
        return sum(changed for changed, _, _ in self._files.values())

    @property
    def files_skipped(self) -> int:
        return sum(skipped for _, skipped, _ in self._files.values())

    @property
    def files_failed(self) -> int:
        return sum(failed for _, _, failed in self._files.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "filesChanged": self.files_changed,
            "filesSkipped": self.files_skipped,
            "filesFailed": self.files_failed,
            "filesWithErrors": self.files_with_errors,
            "documents": self.documents,
            "documentsChanged": self.documents_changed,
            "templatesGenerated": self.templates,
            "findings": dict(sorted(self.severities.items())),
            "rootsNotVerified": self.unverified,
        }

    def line(self) -> str:
        """One line, every count spelt out: `3 files (1 changed, 1 unchanged, 1 with errors); ...`."""
        unchanged = self.files - self.files_changed - self.files_skipped - self.files_failed
        parts = [f"{self.files_changed} changed", f"{max(unchanged, 0)} unchanged"]
        if self.files_skipped:
            parts.append(f"{self.files_skipped} skipped")
        if self.files_with_errors:
            parts.append(f"{self.files_with_errors} with errors")
        findings = [_plural(self.severities[s], s) for s in ("error", "warning") if self.severities[s]]
        unverified = (
            f"; {_plural(self.unverified, 'kustomization root')} NOT render-verified (--no-verify-render)"
            if self.unverified
            else ""
        )
        return (
            f"{_plural(self.files, 'file')} ({', '.join(parts)}); "
            f"{_plural(self.documents, 'document')} ({self.documents_changed} changed); "
            f"{_plural(self.templates, 'new template')}; {', '.join(findings) or 'no problems'}{unverified}"
        )


def run_entry(finding: Finding) -> dict[str, Any]:
    """A finding about the whole run (the target release, the schema used), reported once."""
    return {"file": None, "document": None, "line": None, **finding.as_dict()}


def file_entries(result: FileResult, located: bool = False) -> list[dict[str, Any]]:
    """One row per finding or change, flat, for jq and spreadsheets. A document's rows carry its
    line; `located`: each row carries the line of what it is about, the field a finding names
    included (translator.results.locate), which only the reports that print it pay for."""
    rows: list[dict[str, Any]] = []
    base = {"file": result.source.display, "document": None}
    if result.error:
        line = {"line": result.error_line or 1} if located else {}
        rows.append({**base, **line, **Finding(Severity.ERROR, "parse", "", result.error).as_dict()})
    file_line = {"line": 1} if located else {}
    if result.skipped:
        rows.append({**base, **file_line, **Finding(Severity.INFO, "skipped", "", result.skipped).as_dict()})
    rows.extend({**base, **file_line, **finding.as_dict()} for finding in result.file_findings)
    for document in result.documents:
        if not document.findings:
            continue
        where = {
            **base,
            "document": document.index,
            "kind": document.kind,
            "apiVersion": document.api_version,
            "namespace": document.namespace,
            "name": document.name,
            "status": document.status,
        }
        first = document_line(result.original, document)
        if not located:
            rows.extend({**where, "line": first, **finding.as_dict()} for finding in document.findings)
            continue
        fields = field_lines(result.original, document, (finding.path for finding in document.findings))
        rows.extend({**where, "line": fields.get(f.path, first), **f.as_dict()} for f in document.findings)
    return rows


class FindingRows:
    """Every finding of a run as rows with their lines, and the files it read, for the reports
    written at its end (translator.results.formats)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.rows: list[dict[str, Any]] = []
        self.files: list[str] = []  # as displayed, in input order

    def add(self, result: FileResult) -> None:
        self.files.append(result.source.display)
        self.rows.extend(file_entries(result, located=True))

    def add_rows(self, rows: list[dict[str, Any]]) -> None:
        self.rows.extend(rows)

    def dump(self, kind: str, stream: TextIO, summary: RunSummary) -> None:
        if kind == "json":
            report = {"targetVersion": self.target, "summary": summary.as_dict(), "findings": self.rows}
            json.dump(report, stream, indent=2)
            stream.write("\n")
            return
        from dra_migrate.translator.results.formats import render  # only these reports load their writers

        render(kind, self, summary, stream)


def _document_label(row: dict[str, Any]) -> str:
    if row.get("document") is None:
        return ""
    name = row.get("name") or ""
    if row.get("namespace") and name:
        name = f"{row['namespace']}/{name}"
    where = f"document {row['document'] + 1}"
    if row.get("line"):
        where += f", line {row['line']}"
    kind = row.get("kind")
    if kind:
        return f"{kind} {name}".rstrip() + f" ({where})"
    return where


class TextReport:
    """Problems grouped by file and object, wrapped to 100 columns:

    deploy/app.yaml
      Deployment ml/trainer (document 2, line 14)
        error    invalid-quantity: 0.5 is not a whole number of devices ...
                 at spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]
    """

    def __init__(self, severities: tuple[str, ...]) -> None:
        self.severities = severities
        self.rows: list[dict[str, Any]] = []

    def add(self, result: FileResult) -> None:
        self.add_rows(file_entries(result))

    def add_rows(self, rows: list[dict[str, Any]]) -> None:
        self.rows.extend(r for r in rows if r["severity"] in self.severities)

    def write(self, stream: TextIO, colour: bool) -> None:
        file_name: str | None = None
        label: str | None = None
        for row in self.rows:
            if row["file"] != file_name or file_name is None:
                file_name, label = row["file"], None
                stream.write(paint("(run)" if file_name is None else str(file_name), "bold", colour) + "\n")
            row_label = _document_label(row)
            if row_label and row_label != label:
                label = row_label
                stream.write(f"  {label}\n")
            indent = "    " if row_label else "  "
            severity = paint(f"{row['severity']:<8}", row["severity"], colour)
            body = f"{row['rule']}: {row['message']}"
            hang = indent + " " * 9
            lines = _wrap(body, WIDTH - len(hang))
            stream.write(f"{indent}{severity} {lines[0]}\n")
            stream.writelines(f"{hang}{line}\n" for line in lines[1:])
            if row.get("path"):
                stream.write(f"{hang}at {row['path']}\n")


def _wrap(text: str, width: int) -> list[str]:
    import textwrap  # only a report with findings needs it

    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]


class Progress:
    """A one-line bar on a terminal for large trees; nothing at all when stderr is a pipe."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, threshold: int = PROGRESS_THRESHOLD) -> None:
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


def _report_kind(args: Any) -> str:
    if args.report:
        return str(args.report)
    if args.report_file:
        from dra_migrate.translator.results.formats import kind_for_file

        return kind_for_file(str(args.report_file))
    return "text" if sys.stderr.isatty() else "none"


class Reporter:
    """Where a run's words go. Errors and the one-line summary always reach stderr (a failed run in
    CI is never silent); `--report none` and pipes hide only warnings; `-q` hides all but errors.
    A machine-read report (json, sarif, junit, github, markdown) on stderr is the whole of stderr,
    so it stays parseable."""

    def __init__(self, args: Any, target: str) -> None:
        from dra_migrate.translator.results.formats import MACHINE_READ

        self.quiet = bool(args.quiet)
        self.kind = _report_kind(args)
        self.report_file: str | None = args.report_file
        self.rows = FindingRows(target) if self.kind in MACHINE_READ else None
        self.rows_on_stderr = self.rows is not None and not self.report_file
        details = self.kind == "text" and not self.report_file and not self.quiet
        self.stderr_text = TextReport(("error", "warning") if details else ("error",))
        self.file_text = TextReport(("error", "warning")) if self.kind == "text" and self.report_file else None
        self.summary = RunSummary()

    def _write_report_file(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as stream:  # noqa: PTH123 - a user path
            if self.rows is not None:
                self.rows.dump(self.kind, stream, self.summary)
            elif self.file_text is not None:
                self.file_text.write(stream, colour=False)
                stream.write(self.summary.line() + "\n")

    @property
    def progress_allowed(self) -> bool:
        return not self.quiet and not self.rows_on_stderr

    def add_run(self, finding: Finding) -> None:
        """A finding about the whole run rather than one file."""
        self.add_about(None, finding)

    def add(self, result: FileResult) -> None:
        self.summary.add(result, len(result.templates) + result.templates_inline)
        if self.rows is not None:
            self.rows.add(result)
        if self.file_text is not None:
            self.file_text.add(result)
        if not self.rows_on_stderr:
            self.stderr_text.add(result)

    def add_file_finding(self, result: FileResult, finding: Finding) -> None:
        """A finding about a file already added (a decision taken after it was converted)."""
        if not result.has_errors and finding.severity is Severity.ERROR:
            self.summary.files_with_errors += 1
        if finding.rule == "not-written" and result.changed:
            self.summary.unchanged(result)
        result.file_findings.append(finding)
        self.add_about(result.source.display, finding)

    def add_about(self, file: str | None, finding: Finding) -> None:
        """A finding about a file, whether or not the run converted it (a kustomization it rendered):
        it points at the file's first line, as no better line is known."""
        self.summary.severities.update([str(finding.severity)])
        row = {**run_entry(finding), "file": file, "line": None if file is None else 1}
        for report in (self.rows, self.file_text, None if self.rows_on_stderr else self.stderr_text):
            if report is not None:
                report.add_rows([row])

    def finish(self) -> bool:
        """Write the reports; False when the report file could not be written (said on stderr)."""
        written = True
        if self.report_file:
            try:
                self._write_report_file(self.report_file)
            except OSError as exc:
                reason = exc.strerror or exc
                sys.stderr.write(f"dra-migrate: error: cannot write the report file {self.report_file}: {reason}\n")
                written = False
        if self.rows_on_stderr:
            assert self.rows is not None
            self.rows.dump(self.kind, sys.stderr, self.summary)
            sys.stderr.flush()
            return written
        colour = use_colour(sys.stderr)
        self.stderr_text.write(sys.stderr, colour)
        if not self.quiet:
            sys.stderr.write(self.summary.line() + "\n")
        sys.stderr.flush()
        return written
