"""A composite action run as the GitHub Actions runner runs one, on this machine.

What is reproduced (actions/runner; GitHub's docs on composite actions, shells and file commands):
inputs take their defaults, and `${{ ... }}` expressions in `run`, `env` and the outputs' `value`
are replaced by their values before a step starts (composite actions get no INPUT_* variables:
actions/runner#665); each `run` step's script is written to a file under RUNNER_TEMP and run as
`bash --noprofile --norc -eo pipefail <file>` in GITHUB_WORKSPACE, with the step's `env` over the
job's environment; each step gets its own GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, whose
`name=value` and `name<<DELIMITER` lines become `steps.<id>.outputs`, and whose summaries join the
job's; the first failing step ends the action with its status.

Not reproduced: `uses:` steps (setup-python; the caller puts its own Python first on PATH), and
`if:` conditions (a `run` step with one fails the test rather than being misread).
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BASH = ("bash", "--noprofile", "--norc", "-eo", "pipefail")
ANNOTATION = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


@dataclass
class Annotation:
    level: str
    properties: dict[str, str]
    message: str


@dataclass
class ActionRun:
    returncode: int
    log: str  # the steps' stdout and stderr, as the job log shows them
    outputs: dict[str, str]
    summary: str  # the job summary the steps wrote
    skipped: list[str] = field(default_factory=list)  # the `uses:` steps not run

    @property
    def annotations(self) -> list[Annotation]:
        found = []
        for line in self.log.splitlines():
            match = ANNOTATION.match(line)
            if match:
                pairs = (p.split("=", 1) for p in (match.group(2) or "").split(",") if p)
                properties = {name: _unescape(value) for name, value in pairs}
                found.append(Annotation(match.group(1), properties, _unescape(match.group(3))))
        return found


def _unescape(value: str) -> str:
    for escaped, text in (("%2C", ","), ("%3A", ":"), ("%0A", "\n"), ("%0D", "\r"), ("%25", "%")):
        value = value.replace(escaped, text)
    return value


def _lookup(expression: str, context: Mapping[str, Any]) -> str:
    """A property path (`inputs.paths`, `steps.diff.outputs.exit-code`); anything else is refused."""
    if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[\w-]+)+", expression):
        raise AssertionError(f"expression ${{{{ {expression} }}}} is more than this runner stand-in evaluates")
    value: Any = context
    for part in expression.split("."):
        value = value.get(part, "") if isinstance(value, Mapping) else ""
    return "" if value is None else str(value)


def substitute(text: str, context: Mapping[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: _lookup(m.group(1), context), text)


def read_file_command(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's `name=value` lines and `name<<DELIMITER ... DELIMITER` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            while lines[index] != delimiter:
                block.append(lines[index])
                index += 1
            index += 1
            values[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        elif line:
            raise AssertionError(f"{path.name}: not a file command line: {line!r}")
    return values


def run_action(
    action_dir: Path, workspace: Path, runner_temp: Path, inputs: Mapping[str, str], environment: Mapping[str, str]
) -> ActionRun:
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    declared: dict[str, Any] = action.get("inputs", {})
    unknown = set(inputs) - set(declared)
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    values = {name: inputs.get(name, str(spec.get("default", ""))) for name, spec in declared.items()}
    missing = [name for name, spec in declared.items() if spec.get("required") and not values[name]]
    assert not missing, f"required inputs not given: {missing}"
    commands = runner_temp / "_runner_file_commands"
    commands.mkdir(parents=True, exist_ok=True)
    job = {
        **environment,
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_dir),
        "RUNNER_TEMP": str(runner_temp),
        "RUNNER_OS": "Linux",
    }
    steps: dict[str, Any] = {}
    context = {
        "inputs": values,
        "github": {"action_path": str(action_dir), "workspace": str(workspace)},
        "runner": {"temp": str(runner_temp), "os": "Linux"},
        "steps": steps,
    }
    run = ActionRun(0, "", {}, "")
    for step in action["runs"]["steps"]:
        if "uses" in step:
            run.skipped.append(step["uses"])
            continue
        assert "if" not in step, f"step {step.get('name')!r}: `if:` is not evaluated here"
        assert step["shell"] == "bash", "composite run steps name their shell; bash is what is run here"
        token = uuid.uuid4().hex
        script = runner_temp / f"{token}.sh"
        script.write_text(substitute(step["run"], context), encoding="utf-8")
        output, summary = commands / f"set_output_{token}", commands / f"step_summary_{token}"
        output.touch()
        summary.touch()
        env = {**job, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)}
        env.update({name: substitute(str(value), context) for name, value in step.get("env", {}).items()})
        cwd = workspace / substitute(step.get("working-directory", "."), context)
        done = subprocess.run(
            [*BASH, str(script)], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        run.log += done.stdout
        run.summary += summary.read_text(encoding="utf-8")
        if "id" in step:
            steps[step["id"]] = {"outputs": read_file_command(output), "outcome": "success"}
        if done.returncode != 0:
            run.returncode = done.returncode
            break
    run.outputs = {name: substitute(spec["value"], context) for name, spec in action.get("outputs", {}).items()}
    return run


def environment_with(path_first: list[Path]) -> dict[str, str]:
    """The job's environment: this machine's, less the test's own settings, with `path_first` on PATH."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DRA_MIGRATE_", "GITHUB_", "RUNNER_", "INPUT_"))}
    kept["PATH"] = os.pathsep.join([*(str(p) for p in path_first), os.environ.get("PATH", "")])
    return kept
