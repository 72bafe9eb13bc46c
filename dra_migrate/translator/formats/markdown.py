"""A Markdown summary for a job summary ($GITHUB_STEP_SUMMARY) or a merge-request comment.

Counts first, then a table of the errors and warnings (file:line, severity, rule, message) and,
folded, the changes made. Cell text is escaped so that a message cannot break the table, format
text, open HTML or mention anyone; each table stops at MAX_ROWS.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TextIO

from dra_migrate.translator.formats.rows import description, where

if TYPE_CHECKING:
    from dra_migrate.translator.report import FindingRows, RunSummary

MAX_ROWS = 500  # a merge-request note holds about a million characters, a job summary 1 MiB
# `<` opens HTML, `@` mentions, `$` starts math on GitHub; `>` and `#` are inert inside a cell
_SPECIAL = re.compile(r"([\\`*_\[\]<|~&@$])")
_NEWLINES = re.compile(r"\r\n|\r|\n")


def cell(text: str) -> str:
    """Text for a table cell: Markdown and HTML characters escaped, line breaks as <br>."""
    return _NEWLINES.sub("<br>", _SPECIAL.sub(r"\\\1", text))


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| where | severity | rule | message |", "|---|---|---|---|"]
    lines += [
        f"| {cell(where(row))} | {row['severity']} | `{row['rule']}` | {cell(description(row))} |"
        for row in rows[:MAX_ROWS]
    ]
    if len(rows) > MAX_ROWS:
        lines.append(f"| | | | {len(rows) - MAX_ROWS} more not shown: see --report json |")
    return lines


def markdown(found: FindingRows, summary: RunSummary) -> str:
    problems = [row for row in found.rows if row["severity"] in ("error", "warning")]
    problems.sort(key=lambda row: row["severity"] != "error")  # errors first, each in run order
    changes = [row for row in found.rows if row["severity"] == "info"]
    severities = summary.severities
    lines = [
        f"## dra-migrate: Kubernetes {found.target}",
        "",
        summary.line(),
        "",
        "| errors | warnings | changes made |",
        "|---:|---:|---:|",
        f"| {severities['error']} | {severities['warning']} | {severities['info']} |",
        "",
    ]
    if problems:
        lines += ["### Errors and warnings", "", *_table(problems), ""]
    else:
        lines += ["No errors or warnings.", ""]
    if changes:
        folded = f"<details><summary>{len(changes)} changes made</summary>"
        lines += [folded, "", *_table(changes), "", "</details>", ""]
    return "\n".join(lines)


def write_markdown(found: FindingRows, summary: RunSummary, stream: TextIO) -> None:
    stream.write(markdown(found, summary))
