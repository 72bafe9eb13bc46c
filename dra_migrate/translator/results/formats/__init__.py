"""Reports for the tools reviewers already read, written at the end of a run from its finding rows
(report.file_entries with lines): SARIF for code scanning, JUnit XML for CI test reports, GitHub
workflow commands for annotations, Markdown for a job summary or a merge-request comment.

Importing this package loads no writer: the command line reads its names at every start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from dra_migrate.translator.results.report import FindingRows, RunSummary

MACHINE_READ = ("json", "sarif", "junit", "github", "markdown")
REPORT_KINDS = ("text", *MACHINE_READ, "none")

# --report-file's extension names the format when --report does not (longest suffix first)
BY_EXTENSION = (
    (".sarif.json", "sarif"),
    (".sarif", "sarif"),
    (".json", "json"),
    (".xml", "junit"),
    (".md", "markdown"),
)


def kind_for_file(path: str) -> str:
    lowered = path.lower()
    return next((kind for suffix, kind in BY_EXTENSION if lowered.endswith(suffix)), "text")


def render(kind: str, found: FindingRows, summary: RunSummary, stream: TextIO) -> None:
    """Write every finding of the run, in order, as `kind`."""
    if kind == "sarif":
        from dra_migrate.translator.results.formats.sarif import write_sarif

        write_sarif(found, summary, stream)
    elif kind == "junit":
        from dra_migrate.translator.results.formats.junit import write_junit

        write_junit(found, summary, stream)
    elif kind == "github":
        from dra_migrate.translator.results.formats.github import write_commands

        write_commands(found, summary, stream)
    elif kind == "markdown":
        from dra_migrate.translator.results.formats.markdown import write_markdown

        write_markdown(found, summary, stream)
    else:
        raise ValueError(f"no report format {kind!r}")
