"""A Markdown summary for a job summary ($GITHUB_STEP_SUMMARY) or a merge-request comment.

Counts first, then a table of the errors and warnings (file:line, severity, rule, message) and,
folded, the changes made. Cell text is escaped so that a message cannot break the table, format
text, open HTML or mention anyone. The whole stays within LIMIT characters: rows past it are
counted, not shown (errors come first, so they are the last to go).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TextIO

from dra_migrate.translator.results.formats.rows import description, where

if TYPE_CHECKING:
    from dra_migrate.translator.results.report import FindingRows, RunSummary

# GitHub refuses a comment body over 65,536 characters; a job summary takes 1 MiB, a GitLab note more
LIMIT = 65_536
_ROOM = 400  # kept for the lines that close the report
# `<` opens HTML, `@` mentions, `$` starts math on GitHub; `>` and `#` are inert inside a cell
_SPECIAL = re.compile(r"([\\`*_\[\]<|~&@$])")
_NEWLINES = re.compile(r"\r\n|\r|\n")


def cell(text: str) -> str:
    """Text for a table cell: Markdown and HTML characters escaped, line breaks as <br>."""
    return _NEWLINES.sub("<br>", _SPECIAL.sub(r"\\\1", text))


def _table(rows: list[dict[str, Any]], budget: int) -> list[str]:
    """The table of `rows`, in at most `budget` characters (with line breaks) when it can."""
    lines = ["| where | severity | rule | message |", "|---|---|---|---|"]
    budget -= sum(len(line) + 1 for line in lines)
    for shown, row in enumerate(rows):
        line = f"| {cell(where(row))} | {row['severity']} | `{row['rule']}` | {cell(description(row))} |"
        if len(line) + 1 > budget:
            lines.append(f"| | | | {len(rows) - shown} more not shown: see --report sarif or json |")
            break
        lines.append(line)
        budget -= len(line) + 1
    return lines


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


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
        lines += ["### Errors and warnings", ""]
        lines += [*_table(problems, LIMIT - _ROOM - _size(lines)), ""]
    else:
        lines += ["No errors or warnings.", ""]
    if changes:
        lines += [f"<details><summary>{len(changes)} changes made</summary>", ""]
        lines += [*_table(changes, LIMIT - _ROOM - _size(lines)), "", "</details>", ""]
    return "\n".join(lines)


def write_markdown(found: FindingRows, summary: RunSummary, stream: TextIO) -> None:
    stream.write(markdown(found, summary))
