"""GitHub workflow commands, one line per finding: `::error file=F,line=L,title=RULE::message`.

The runner reads commands from a step's stdout and stderr alike (actions/runner ScriptHandler) and
shows each as an annotation on the file's line. Values are escaped as its parser unescapes them
(ActionCommand.cs): `%`, CR and LF in the message; also `:` and `,` in properties.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from dra_migrate.translator.results.formats.rows import description, in_file, where

if TYPE_CHECKING:
    from dra_migrate.translator.results.report import FindingRows, RunSummary

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(row: dict[str, Any]) -> str:
    properties: list[tuple[str, str]] = []
    message = description(row)
    if in_file(row):
        properties += [("file", str(row["file"])), ("line", str(row.get("line") or 1))]
    elif row.get("file") is not None:  # stdin: no file to annotate, the line said in the message
        message = f"{where(row)}: {message}"
    properties.append(("title", str(row["rule"])))
    listed = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    return f"::{COMMANDS[row['severity']]} {listed}::{escape_data(message)}"


def write_commands(found: FindingRows, summary: RunSummary, stream: TextIO) -> None:
    stream.writelines(command(row) + "\n" for row in found.rows)
    stream.write(summary.line() + "\n")  # plain text: the step's log says what the run did
