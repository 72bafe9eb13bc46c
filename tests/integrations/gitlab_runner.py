"""A job of a GitLab CI template run as GitLab Runner runs one with the bash shell, on this machine.

What is reproduced (gitlab-runner shells/bash.go and abstract.go): the job runs when its `rules`
match the pipeline's variables; its `before_script` and `script` lines become one script, each line
echoed as `$ <line>` and then run, all of it under `set -o pipefail`, `set -o errexit` and
`set +o noclobber` as `: | eval '<lines>'` in one bash (so a variable set by one line is seen by the
next, and no line reads stdin), in CI_PROJECT_DIR; the environment holds the predefined variables,
then the template's (global, then the job's), then the project's CI/CD variables, each overriding
the one before. The job's image is not pulled: the caller's PATH stands for it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_RULE = re.compile(r'^\$(\w+)\s*(==|!=)\s*"([^"]*)"$')


@dataclass
class JobRun:
    returncode: int
    log: str


def load_job(template: Path, name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The job and the template's global variables."""
    document = yaml.safe_load(template.read_text(encoding="utf-8"))
    job: dict[str, Any] = document[name]
    return job, {k: str(v) for k, v in document.get("variables", {}).items()}


def rules_match(job: Mapping[str, Any], variables: Mapping[str, str]) -> bool:
    """`rules: - if: $VAR == "value"` (the form the template uses): the first rule that matches runs the job."""
    for rule in job.get("rules", [{}]):
        condition = rule.get("if")
        if condition is None:
            return _runs(rule)
        parsed = _RULE.match(condition.strip())
        assert parsed, f"rule {condition!r} is more than this runner stand-in evaluates"
        name, operator, value = parsed.groups()
        if (variables.get(name, "") == value) == (operator == "=="):
            return _runs(rule)
    return False


def _runs(rule: Mapping[str, Any]) -> bool:
    return str(rule.get("when", "on_success")) != "never"


def job_script(job: Mapping[str, Any], project_dir: Path) -> str:
    lines = [*job.get("before_script", []), *job["script"]]
    body = "".join(f"echo {shlex.quote('$ ' + line)}\n{line}\n" for line in lines)
    return (
        "if set -o | grep pipefail > /dev/null; then set -o pipefail; fi; set -o errexit\n"
        "set +o noclobber\n"
        f": | eval {shlex.quote(f'cd {shlex.quote(str(project_dir))}' + chr(10) + body)}\n"
        "exit 0\n"
    )


def run_job(
    template: Path,
    name: str,
    project_dir: Path,
    predefined: Mapping[str, str],
    project_variables: Mapping[str, str],
    environment: Mapping[str, str],
) -> JobRun:
    job, global_variables = load_job(template, name)
    variables = {
        **environment,
        **predefined,
        **global_variables,
        **{k: str(v) for k, v in job.get("variables", {}).items()},
        **project_variables,
    }
    assert rules_match(job, variables), f"job {name} does not run in this pipeline"
    done = subprocess.run(
        ["bash"],
        input=job_script(job, project_dir),
        cwd=project_dir,
        env=variables,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    return JobRun(done.returncode, done.stdout)
