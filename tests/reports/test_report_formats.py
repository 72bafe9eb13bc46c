"""Every report format of `convert` and `diff`, run as a user runs them, on a pull-request-sized repository.

The repository (pull-request/) marks each line a finding belongs on with `# finding: RULE`; each
format must name exactly those findings on exactly those lines, and validate against the schema
the tools that read it use: the SARIF 2.1.0 JSON schema (GitHub code scanning) and the Jenkins
xunit plugin's JUnit XSD. Workflow commands are read back as the Actions runner parses them,
Markdown as a CommonMark renderer with GitHub's tables renders it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema
from kubectl import require_standalone_kustomize
from markdown_it import MarkdownIt

from dra_migrate.engine import RULES
from dra_migrate.translator.renders.kustomize import TEMPLATES_FILE

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE / "pull-request"
SARIF_SCHEMA = HERE / "schemas" / "sarif-schema-2.1.0.json"
JUNIT_XSD = HERE / "schemas" / "junit-10.xsd"

Marked = set[tuple[str, int, str]]  # (file, line, rule)


def marked_findings(root: Path) -> Marked:
    """The `# finding: RULE[, RULE]` comments of the YAML files under `root`, by file and line."""
    marked: Marked = set()
    for path in sorted(root.rglob("*.yaml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "# finding:" in line:
                rules = line.split("# finding:", 1)[1].split(",")
                marked.update((path.relative_to(root).as_posix(), number, rule.strip()) for rule in rules)
    return marked


MARKED = marked_findings(EXAMPLE)
BY_ID = {rule.id: rule for rule in RULES}
# --no-verify-render over the example's kustomization roots is said once, about the run (no file)
UNVERIFIED = (None, None, "render-not-verified")


def dra_migrate(*args: str, cwd: Path = EXAMPLE, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, in the repository's root as a CI job runs it; render verification only when asked."""
    environment = {k: v for k, v in os.environ.items() if k != "DRA_MIGRATE_KUSTOMIZE"}
    return subprocess.run(
        [sys.executable, "-m", "dra_migrate", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )


def diff_report(kind: str, *extra: str) -> str:
    done = dra_migrate("diff", "--no-verify-render", "--report", kind, *extra, ".")
    assert done.returncode == 2, done.stderr  # the example has an error
    assert done.stdout.startswith("--- a/"), "the diff itself still goes to stdout"
    return done.stderr


def sarif_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return schema


def validate_sarif(log: dict[str, Any]) -> None:
    validator = jsonschema.Draft4Validator(sarif_schema(), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    validator.validate(log)


def test_the_example_marks_an_error_a_warning_and_changes() -> None:
    severities = {str(BY_ID[rule].severity) for _, _, rule in MARKED}
    assert severities == {"error", "warning", "info"}


def test_sarif_validates_and_places_each_finding_on_its_line() -> None:
    log = json.loads(diff_report("sarif"))
    validate_sarif(log)
    assert log["$schema"] == sarif_schema()["id"]  # the schema it was checked against
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert [rule["id"] for rule in driver["rules"]] == [rule.id for rule in RULES]
    assert [rule["shortDescription"]["text"] for rule in driver["rules"]] == [rule.meaning for rule in RULES]
    placed = set()
    for result in run["results"]:
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        placed.add((physical["artifactLocation"]["uri"], physical["region"]["startLine"], result["ruleId"]))
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        severity = str(BY_ID[result["ruleId"]].severity)
        assert result["level"] == {"error": "error", "warning": "warning", "info": "note"}[severity]
    assert placed == MARKED
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == EXAMPLE.as_uri() + "/"


def test_sarif_run_findings_are_notifications_without_a_location(tmp_path: Path) -> None:
    report = tmp_path / "findings.sarif"
    done = dra_migrate(
        "diff", "--no-verify-render", "--target-version", "1.99", "--report-file", str(report), "apps/legacy"
    )
    assert done.returncode == 1, done.stderr
    log = json.loads(report.read_text(encoding="utf-8"))
    validate_sarif(log)
    (run,) = log["runs"]
    notifications = {n["associatedRule"]["id"]: n for n in run["invocations"][0]["toolExecutionNotifications"]}
    # --no-verify-render is said too, for the kustomization roots the change renders into
    assert set(notifications) <= {"target-not-released", "render-not-verified"}
    notification = notifications["target-not-released"]
    assert notification["level"] == "warning"
    assert "1.99" in notification["message"]["text"]
    assert {r["ruleId"] for r in run["results"]} == {rule for _, _, rule in MARKED if rule == "api-version"}


def test_sarif_names_a_file_outside_the_working_directory_by_its_uri(tmp_path: Path) -> None:
    outside = tmp_path / "repo"
    shutil.copytree(EXAMPLE / "apps" / "legacy", outside)
    done = dra_migrate("diff", "--no-verify-render", "--report", "sarif", str(outside))
    log = json.loads(done.stderr)
    validate_sarif(log)
    (result,) = log["runs"][0]["results"]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (outside / "claim-template.yaml").as_uri()}


def test_convert_reports_the_files_it_does_not_write_at_their_first_line(tmp_path: Path) -> None:
    done = dra_migrate("convert", "--no-verify-render", "--report", "sarif", "--output-dir", str(tmp_path), ".")
    assert done.returncode == 2
    log = json.loads(done.stderr)
    validate_sarif(log)
    placed = set()
    for result in log["runs"][0]["results"]:
        physical = result["locations"][0]["physicalLocation"]
        placed.add((physical["artifactLocation"]["uri"], physical["region"]["startLine"], result["ruleId"]))
    not_written = {(file, line) for file, line, rule in placed if rule == "not-written"}
    # the files of the error's unit stay as they were, each said so at its first line
    (errors,) = {file for file, _, rule in MARKED if str(BY_ID[rule].severity) == "error"}
    assert {line for _, line in not_written} == {1}
    assert {file for file, _ in not_written} >= {errors, "kustomization.yaml"}
    assert placed - {(file, 1, "not-written") for file, _ in not_written} == MARKED


def junit_texts(case: ET.Element) -> str:
    return "".join(child.text or "" for child in case if child.tag in ("failure", "system-out"))


def test_junit_validates_and_fails_the_document_with_the_error(tmp_path: Path) -> None:
    report = tmp_path / "dra-migrate.xml"  # .xml: the format follows the extension
    done = dra_migrate("diff", "--no-verify-render", "--report-file", str(report), ".")
    assert done.returncode == 2, done.stderr
    xmlschema.XMLSchema(JUNIT_XSD).validate(str(report))
    root = ET.parse(report).getroot()
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    files = {path.relative_to(EXAMPLE).as_posix() for path in EXAMPLE.rglob("*.yaml")}
    # one suite per file, a file without findings included, and the templates file the run would add
    assert set(suites) == {*files, TEMPLATES_FILE, "(run)"}
    assert "render-not-verified" in "".join(junit_texts(case) for case in suites["(run)"].iter("testcase"))
    text = "\n".join(junit_texts(case) for case in root.iter("testcase"))
    for file, line, rule in MARKED:
        assert f"{file}:{line}: {BY_ID[rule].severity} {rule}: " in text, (file, line, rule)
    assert text.count(": info ") + text.count(": warning ") + text.count(": error ") == len(MARKED) + 1
    failing = [case for case in root.iter("testcase") if case.find("failure") is not None]
    errors = {(file, line) for file, line, rule in MARKED if str(BY_ID[rule].severity) == "error"}
    assert len(failing) == len(errors) == int(root.get("failures", "-1"))
    for case in failing:
        failure = case.find("failure")
        assert failure is not None
        assert any(f"{file}:{line}:" in (failure.get("message") or "") for file, line in errors)
        assert case.get("classname") in {file for file, _ in errors}
    assert int(root.get("tests", "0")) == sum(1 for _ in root.iter("testcase"))


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """A line as the Actions runner reads it (ActionCommand.TryParseV2): the command, its properties, its data."""
    assert line.startswith("::")
    end = line.index("::", 2)
    info, data = line[2:end], line[end + 2 :]
    name, _, listed = info.partition(" ")
    properties = {}
    for pair in filter(None, listed.split(",")):
        key, _, value = pair.partition("=")
        for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
            value = value.replace(escaped, char)
        properties[key] = value
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        data = data.replace(escaped, char)
    return name, properties, data


def workflow_commands(stderr: str) -> Iterator[tuple[str, dict[str, str], str]]:
    lines = stderr.splitlines()
    assert not lines[-1].startswith("::"), "the summary line closes the report"
    yield from (parse_workflow_command(line) for line in lines[:-1])


def test_github_commands_annotate_each_finding_on_its_line() -> None:
    annotated = set()
    for name, properties, message in workflow_commands(diff_report("github")):
        rule = properties["title"]
        assert name == {"error": "error", "warning": "warning", "info": "notice"}[str(BY_ID[rule].severity)]
        line = int(properties["line"]) if "line" in properties else None
        annotated.add((properties.get("file"), line, rule))
        assert message
    assert annotated == MARKED | {UNVERIFIED}


ODD_POD = """apiVersion: v1
kind: Pod
metadata:
  name: "a,b: 100%|x`y`@z <b>\\nnext"
spec:
  containers:
    - name: main
      resources:
        limits:
          nvidia.com/gpu: 1.5
"""


def test_github_commands_escape_what_the_runner_unescapes(tmp_path: Path) -> None:
    odd = tmp_path / "team,a: 50%" / "pod.yaml"
    odd.parent.mkdir()
    odd.write_text(ODD_POD, encoding="utf-8")
    done = dra_migrate("diff", "--report", "github", str(odd.parent), cwd=tmp_path)
    (command,) = list(workflow_commands(done.stderr))
    name, properties, message = command
    assert (name, properties) == (
        "error",
        {"file": "team,a: 50%/pod.yaml", "line": "10", "title": "invalid-device-count"},
    )
    assert "a,b: 100%|x`y`@z <b>\nnext" in message
    (command,) = list(workflow_commands(dra_migrate("diff", "--report", "github", "-", stdin=ODD_POD).stderr))
    assert "file" not in command[1]
    assert command[2].startswith("<stdin>:10: ")


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Each table's body rows, as the cells' plain text, rendered by a CommonMark parser with GFM tables."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] = []
    inside_body = False
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tbody_open":
            inside_body = True
        elif token.type == "tbody_close":
            inside_body = False
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and inside_body:
            row.append(
                "".join(child.content for child in token.children or [] if child.type in ("text", "code_inline"))
            )
        elif token.type == "tr_close" and inside_body:
            tables[-1].append(row)
    return tables


def test_markdown_counts_then_lists_each_finding_on_its_line() -> None:
    text = diff_report("markdown")
    counts, problems, changes = markdown_tables(text)
    assert counts == [["1", "2", str(sum(1 for _, _, rule in MARKED if str(BY_ID[rule].severity) == "info"))]]
    listed = set()
    for where, severity, rule, message in problems + changes:
        if where == "(run)":
            assert rule == UNVERIFIED[2]
            continue
        file, line = where.rsplit(":", 1)
        assert severity == str(BY_ID[rule].severity)
        listed.add((file, int(line), rule))
        assert message
    assert listed == MARKED
    assert [row[1] for row in problems] == ["error", "warning", "warning"]


def test_markdown_cells_keep_a_hostile_message_to_its_cell(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(ODD_POD, encoding="utf-8")
    text = dra_migrate("diff", "--report", "markdown", ".", cwd=tmp_path).stderr
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<b>" not in html and "<code>y</code>" not in html
    (_, problems) = markdown_tables(text)
    (row,) = problems
    assert row[:3] == ["pod.yaml:10", "error", "invalid-device-count"]
    assert "a,b: 100%|x`y`@z <b>" in row[3]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("r.sarif", "sarif"),
        ("r.sarif.json", "sarif"),
        ("r.json", "json"),
        ("r.XML", "junit"),
        ("r.md", "markdown"),
        ("r.txt", "text"),
    ],
)
def test_report_file_format_follows_the_extension(tmp_path: Path, name: str, kind: str) -> None:
    report = tmp_path / name
    dra_migrate("diff", "--no-verify-render", "--report-file", str(report), "apps/legacy")
    written = report.read_text(encoding="utf-8")
    assert sniffed_format(written) == kind, written


def sniffed_format(written: str) -> str:
    """Which report a text is, by what only that format holds."""
    if written.startswith("<?xml"):
        return "junit" if ET.fromstring(written.split("?>", 1)[1]).tag == "testsuites" else "xml"
    if written.startswith("{"):
        document = json.loads(written)
        return "sarif" if document.get("version") == "2.1.0" else "json" if "targetVersion" in document else "?"
    if written.startswith("## dra-migrate"):
        return "markdown"
    return "text" if written.splitlines()[-1].startswith("1 file") else "?"


def test_report_names_the_format_whatever_the_extension(tmp_path: Path) -> None:
    report = tmp_path / "findings.xml"
    dra_migrate("diff", "--no-verify-render", "--report", "json", "--report-file", str(report), "apps/legacy")
    rows = json.loads(report.read_text(encoding="utf-8"))["findings"]
    found = {(row["file"], row["line"], row["rule"]) for row in rows}
    assert found - {UNVERIFIED} == {m for m in MARKED if m[2] == "api-version"}


def test_a_kustomization_root_finding_points_at_its_first_line() -> None:
    environment = {**os.environ, "DRA_MIGRATE_KUSTOMIZE": require_standalone_kustomize()}
    done = subprocess.run(
        [sys.executable, "-m", "dra_migrate", "diff", "--report", "sarif", "."],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=environment,
    )
    log = json.loads(done.stderr)
    validate_sarif(log)
    verified = [r for r in log["runs"][0]["results"] if r["ruleId"] == "render-verified"]
    (result,) = verified
    physical = result["locations"][0]["physicalLocation"]
    assert (physical["artifactLocation"]["uri"], physical["region"]["startLine"]) == ("kustomization.yaml", 1)


def test_markdown_stays_within_a_comment_and_counts_what_it_leaves_out(tmp_path: Path) -> None:
    for number in range(300):
        (tmp_path / f"pod-{number:03d}.yaml").write_text(ODD_POD.replace("a,b", f"pod-{number}"), encoding="utf-8")
    text = dra_migrate("diff", "--report", "markdown", ".", cwd=tmp_path).stderr
    assert len(text) <= 65_536  # what GitHub takes as a pull-request comment
    (counts, problems) = markdown_tables(text)
    assert counts[0][0] == "300"
    shown = [row for row in problems if row[0]]
    (left_out,) = [row[3] for row in problems if not row[0]]
    assert len(shown) + int(left_out.split()[0]) == 300
    assert len(shown) > 100


def test_junit_gives_the_run_its_own_suite(tmp_path: Path) -> None:
    done = dra_migrate("diff", "--no-verify-render", "--target-version", "1.99", "--report", "junit", "apps/legacy")
    report = tmp_path / "run.xml"
    report.write_text(done.stderr, encoding="utf-8")
    xmlschema.XMLSchema(JUNIT_XSD).validate(str(report))
    suites = {suite.get("name"): suite for suite in ET.parse(report).getroot().iter("testsuite")}
    (case,) = suites["(run)"].iter("testcase")
    assert case.find("failure") is None
    assert junit_texts(case).startswith("(run): warning target-not-released: ")
    assert set(suites) == {"(run)", "apps/legacy/claim-template.yaml"}
