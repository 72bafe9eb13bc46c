"""What every report says of a finding row: where it is and what it says."""

from __future__ import annotations

from typing import Any

STDIN = "<stdin>"


def in_file(row: dict[str, Any]) -> bool:
    """Whether the row points into a file a reviewer can open (not the run, not stdin)."""
    return row.get("file") not in (None, STDIN)


def where(row: dict[str, Any]) -> str:
    """`deploy/app.yaml:14`, `<stdin>:3`, or `(run)`."""
    if row.get("file") is None:
        return "(run)"
    line = row.get("line")
    return f"{row['file']}:{line}" if line else str(row["file"])


def subject(row: dict[str, Any]) -> str:
    """The object a document row is about: `Deployment ml/trainer`, `document 3`, or nothing."""
    if row.get("document") is None:
        return ""
    name = row.get("name") or ""
    if row.get("namespace") and name:
        name = f"{row['namespace']}/{name}"
    kind = row.get("kind")
    return f"{kind} {name}".rstrip() if kind else f"document {row['document'] + 1}"


def description(row: dict[str, Any]) -> str:
    """The message with the object it is about and the field it names."""
    about = subject(row)
    text = f"{about}: {row['message']}" if about else str(row["message"])
    return f"{text} (at {row['path']})" if row.get("path") else text
