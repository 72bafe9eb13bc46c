"""action.yml run as the GitHub Actions runner runs a composite action (github_runner.py), on a
pull request's repository: the job summary, the annotations on the right file and line, the
outputs (a SARIF file for upload-sarif) and the step's status for each `fail-on`.

Each run installs dra-migrate from the action's own copy with pip, as a workflow does (about half
a minute), into a virtualenv of its own standing for setup-python's."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
from github_runner import ActionRun, environment_with, run_action
from integration_support import assert_sarif, job_python, line_of, project_copy, pull_request_repository

DEPLOYMENT = PurePosixPath("deploy/training/deployment.yaml")


@pytest.fixture(scope="module")
def action(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action as a workflow's `uses: <owner>/dra-migrate@<tag>` fetches it: the repository's files."""
    return project_copy(tmp_path_factory.mktemp("action"))


@pytest.fixture(scope="module")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return job_python(tmp_path_factory.mktemp("setup-python") / "venv")


def _run(action: Path, python_bin: Path, tmp_path: Path, *, with_error: bool, **inputs: str) -> tuple[ActionRun, Path]:
    workspace = pull_request_repository(tmp_path / "workspace", with_error=with_error)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    run = run_action(action, workspace, runner_temp, inputs, environment_with([python_bin]))
    return run, workspace


def test_a_pull_request_gets_annotations_a_summary_and_sarif(action: Path, python_bin: Path, tmp_path: Path) -> None:
    run, workspace = _run(action, python_bin, tmp_path, with_error=False, paths="deploy", **{"sarif-file": "dra.sarif"})
    assert run.skipped == ["actions/setup-python@v6"]
    assert run.returncode == 0, run.log  # fail-on: errors (the default), and there are only changes
    assert run.outputs["exit-code"] == "1"

    deployment = workspace / "deploy/training/deployment.yaml"
    annotations = {a.properties["title"]: a for a in run.annotations if a.properties.get("file") == str(DEPLOYMENT)}
    # the claim on the container's resources, the path taken on the device request itself
    assert int(annotations["device-plugin-to-claim"].properties["line"]) == line_of(deployment, "resources:")
    assert int(annotations["migration-path"].properties["line"]) == line_of(deployment, "nvidia.com/gpu")
    assert {a.level for a in annotations.values()} == {"notice"}  # changes made: no warning, no error
    assert not [a for a in run.annotations if a.properties.get("file") == "deploy/web/service.yaml"]
    assert "+++ b/deploy/training/deployment.yaml" in run.log  # the diff itself, in the log

    assert "deploy/training/deployment.yaml" in run.summary and "|" in run.summary  # a Markdown table
    sarif_path = Path(run.outputs["sarif-file"])
    assert sarif_path == workspace / "dra.sarif"
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    assert_sarif(sarif)
    [run_report] = sarif["runs"]
    claims = [r for r in run_report["results"] if r["ruleId"] == "device-plugin-to-claim"]
    [where] = [location["physicalLocation"] for result in claims for location in result["locations"]]
    assert where["artifactLocation"]["uri"] == str(DEPLOYMENT)
    assert where["region"]["startLine"] == line_of(deployment, "resources:")


@pytest.mark.parametrize(("fail_on", "returncode"), [("errors", 2), ("never", 0)])
def test_an_unconvertible_workload_is_an_error_on_its_line(
    action: Path, python_bin: Path, tmp_path: Path, fail_on: str, returncode: int
) -> None:
    run, workspace = _run(action, python_bin, tmp_path, with_error=True, **{"fail-on": fail_on})
    assert run.returncode == returncode, run.log
    assert run.outputs["exit-code"] == "2" and run.outputs["sarif-file"] == ""
    pod = workspace / "deploy/serving/pod.yaml"
    [error] = [a for a in run.annotations if a.level == "error"]
    assert error.properties["file"] == "deploy/serving/pod.yaml"
    assert int(error.properties["line"]) == line_of(pod, "nvidia.com/gpu", after="limits:")  # the limit in question
    assert error.properties["title"] == "requests-limits-differ"
    assert "requests-limits-differ" in run.summary


def test_fail_on_changes_fails_a_pull_request_with_changes(action: Path, python_bin: Path, tmp_path: Path) -> None:
    run, _ = _run(action, python_bin, tmp_path, with_error=False, **{"fail-on": "changes"})
    assert run.returncode == 1 and run.outputs["exit-code"] == "1"
    assert "dra-migrate diff exited 1 (fail-on: changes)" in run.log


def test_a_bad_fail_on_stops_before_anything_is_installed(action: Path, python_bin: Path, tmp_path: Path) -> None:
    run, _ = _run(action, python_bin, tmp_path, with_error=False, **{"fail-on": "always"})
    assert run.returncode == 2
    [error] = run.annotations
    assert error.message == "fail-on is 'always': it takes changes, errors or never"
    assert run.outputs == {"exit-code": "", "sarif-file": ""}


def test_arguments_diff_refuses_fail_the_step_whatever_fail_on_says(
    action: Path, python_bin: Path, tmp_path: Path
) -> None:
    run, _ = _run(action, python_bin, tmp_path, with_error=False, args="--no-such-option", **{"fail-on": "never"})
    assert run.returncode == 2
    assert "unrecognized arguments: --no-such-option" in run.log  # argparse's message, in the log
    [error] = run.annotations
    assert error.message == "dra-migrate diff could not run (exit 2); its message is above"
    assert run.outputs == {"exit-code": "", "sarif-file": ""}
