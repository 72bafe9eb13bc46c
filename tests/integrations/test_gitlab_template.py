"""ci/gitlab/dra-migrate.gitlab-ci.yml run as GitLab Runner runs its job (gitlab_runner.py) in a
merge request pipeline, with GitLab's predefined variables: the JUnit report where
`artifacts:reports:junit` says, failing on the error's file and line, the summary and diff artifacts,
and the job's status for `DRA_MIGRATE_FAIL_ON`. Each run installs dra-migrate with pip from this
checkout (the project's DRA_MIGRATE_PACKAGE), into a virtualenv standing for the job image's Python."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from github_runner import environment_with
from gitlab_runner import load_job, rules_match, run_job
from integration_support import REPO_ROOT, assert_junit, job_python, line_of, project_copy, pull_request_repository

TEMPLATE = REPO_ROOT / "ci" / "gitlab" / "dra-migrate.gitlab-ci.yml"
JOB = "dra-migrate-diff"
BASE_SHA = "0c5e1f7a9b3d2e4f6a8c0b1d3e5f7a9c2b4d6e8f"


def _predefined(project_dir: Path, source: str = "merge_request_event") -> dict[str, str]:
    return {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_PROJECT_DIR": str(project_dir),
        "CI_PROJECT_NAME": "platform",
        "CI_JOB_NAME": JOB,
        "CI_PIPELINE_SOURCE": source,
        "CI_COMMIT_SHA": "5f3a9c7e1b2d4f6a8c0e2b4d6f8a0c1e3b5d7f9a",
        "CI_COMMIT_REF_NAME": "gpu-to-dra",
        "CI_MERGE_REQUEST_IID": "42",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": BASE_SHA,
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "gpu-to-dra",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
    }


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return project_copy(tmp_path_factory.mktemp("dra-migrate"))


@pytest.fixture(scope="module")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return job_python(tmp_path_factory.mktemp("job-image") / "venv")


def test_the_job_runs_in_merge_request_pipelines_only() -> None:
    job, _ = load_job(TEMPLATE, JOB)
    assert rules_match(job, {"CI_PIPELINE_SOURCE": "merge_request_event"})
    assert not rules_match(job, {"CI_PIPELINE_SOURCE": "push"})
    assert job["artifacts"]["when"] == "always", "the reports are wanted most when the job fails"


def test_a_merge_request_gets_a_junit_report_failing_on_the_errors_line(
    package: Path, python_bin: Path, tmp_path: Path
) -> None:
    project = pull_request_repository(tmp_path / "project", with_error=True)
    run = run_job(
        TEMPLATE,
        JOB,
        project,
        _predefined(project),
        {"DRA_MIGRATE_PACKAGE": str(package)},
        environment_with([python_bin]),
    )
    assert run.returncode == 2, run.log  # DRA_MIGRATE_FAIL_ON: errors, and there is one
    assert "dra-migrate diff exited 2" in run.log

    job, _ = load_job(TEMPLATE, JOB)
    report = project / job["artifacts"]["reports"]["junit"]
    assert_junit(report)
    suites = {s.get("name"): s for s in ET.parse(report).getroot().iter("testsuite")}
    pod = suites["deploy/serving/pod.yaml"]
    assert pod.get("failures") == "1"
    [failure] = pod.iter("failure")
    assert failure.get("type") == "requests-limits-differ"
    line = int(failure.get("message", "").split(":")[1])  # deploy/serving/pod.yaml:<line>: ...
    source = project / "deploy/serving/pod.yaml"
    assert line == line_of(source, "nvidia.com/gpu", after="limits:")  # the limit in question
    assert suites["deploy/training/deployment.yaml"].get("failures") == "0"  # converted: changes, no failure
    assert suites["deploy/web/service.yaml"].get("failures") == "0"

    for artifact in job["artifacts"]["paths"]:
        assert (project / artifact).is_file(), artifact
    summary = (project / "dra-migrate-summary.md").read_text(encoding="utf-8")
    assert "deploy/serving/pod.yaml" in summary and "requests-limits-differ" in summary
    diff = (project / "dra-migrate.diff").read_text(encoding="utf-8")
    assert "+++ b/deploy/training/deployment.yaml" in diff and "resourceClaimTemplateName" in diff
    assert job["artifacts"]["expose_as"], "the summary is linked from the merge request"


def test_settings_reach_the_diff_and_fail_on_never_passes(package: Path, python_bin: Path, tmp_path: Path) -> None:
    project = pull_request_repository(tmp_path / "project", with_error=True)
    settings = {
        "DRA_MIGRATE_PACKAGE": str(package),
        "DRA_MIGRATE_PATHS": "deploy/training deploy/web",
        "DRA_MIGRATE_TARGET_VERSION": "1.32",
        "DRA_MIGRATE_FAIL_ON": "never",
    }
    run = run_job(TEMPLATE, JOB, project, _predefined(project), settings, environment_with([python_bin]))
    assert run.returncode == 0, run.log
    assert "dra-migrate diff exited 1" in run.log  # changes, no error: deploy/serving was not read
    assert "resource.k8s.io/v1beta1" in (project / "dra-migrate.diff").read_text(encoding="utf-8")
    suites = [s.get("name") for s in ET.parse(project / "dra-migrate-junit.xml").getroot().iter("testsuite")]
    assert "deploy/serving/pod.yaml" not in suites and "deploy/training/deployment.yaml" in suites
