"""JUnit XML for CI test reports (GitLab's `artifacts:reports:junit`, Jenkins's junit and xunit steps).

One testsuite per file the run read, and one for the run itself when it has findings of its own.
A file's testcases: one per document with findings (named for its object) and one for the file as a
whole (its parse error, a kustomization's render check, a not-written decision), so a file without
findings is one passing testcase. A testcase fails when it has errors: one <failure> whose text
lists each with its file and line; warnings and changes made go to its <system-out>. Only what the
Jenkins xunit plugin's junit-10.xsd allows is written (no file or line attributes on testcases).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any, TextIO

from dra_migrate.translator.results.formats.rows import description, subject, where

if TYPE_CHECKING:
    from dra_migrate.translator.results.report import FindingRows, RunSummary

RUN_SUITE = "(run)"


def _line(row: dict[str, Any]) -> str:
    return f"{where(row)}: {row['severity']} {row['rule']}: {description(row)}"


def _testcase(suite: ET.Element, classname: str, name: str, rows: list[dict[str, Any]]) -> bool:
    """Add one testcase; True when it fails."""
    case = ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")
    errors = [row for row in rows if row["severity"] == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        failure = ET.SubElement(
            case, "failure", type=first["rule"], message=f"{where(first)}: {first['rule']}: {first['message']}{more}"
        )
        failure.text = "\n".join(_line(row) for row in errors) + "\n"
    others = [row for row in rows if row["severity"] != "error"]
    if others:
        ET.SubElement(case, "system-out").text = "\n".join(_line(row) for row in others) + "\n"
    return bool(errors)


def _suite(parent: ET.Element, name: str, cases: dict[str, list[dict[str, Any]]], file: str | None) -> tuple[int, int]:
    suite = ET.SubElement(parent, "testsuite", name=name)
    failed = sum(_testcase(suite, name, case, rows) for case, rows in cases.items())
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failed))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    suite.set("time", "0")
    if file is not None:
        suite.set("file", file)
    return len(cases), failed


def _case_name(row: dict[str, Any]) -> str:
    if row.get("document") is None:
        return "file"
    return f"{subject(row)} (document {row['document'] + 1})"


def junit_tree(found: FindingRows, summary: RunSummary) -> ET.Element:
    by_file: dict[str, dict[str, list[dict[str, Any]]]] = {file: {} for file in found.files}
    run_rows: list[dict[str, Any]] = []
    for row in found.rows:
        if row.get("file") is None:
            run_rows.append(row)
            continue
        cases = by_file.setdefault(row["file"], {})
        cases.setdefault(_case_name(row), []).append(row)
    root = ET.Element("testsuites", name=f"dra-migrate (Kubernetes {found.target})")
    tests = failures = 0
    if run_rows:
        counted = _suite(root, RUN_SUITE, {"run": run_rows}, None)
        tests, failures = tests + counted[0], failures + counted[1]
    for file, cases in by_file.items():
        counted = _suite(root, file, cases or {"file": []}, file)
        tests, failures = tests + counted[0], failures + counted[1]
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", "0")
    root.set("time", "0")
    return root


def write_junit(found: FindingRows, summary: RunSummary, stream: TextIO) -> None:
    tree = ET.ElementTree(junit_tree(found, summary))
    ET.indent(tree)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    tree.write(stream, encoding="unicode")
    stream.write("\n")
