"""Static checks of the container image definition (no Docker engine needed).

The image's default command must be exactly what deploy/base runs, as the same non-root user,
and the build context must keep the virtualenv, tests, git data and private keys out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from dockerfile_model import Stage, env_of, exec_form, parse_dockerfile

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
DEPLOYMENT = REPO_ROOT / "deploy" / "base" / "deployment.yaml"


def deployment_container() -> dict[str, Any]:
    deployment = yaml.safe_load(DEPLOYMENT.read_text(encoding="utf-8"))
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))[1]


def test_multi_stage_on_python_slim(stages: list[Stage]) -> None:
    global_args, _ = parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))
    assert len(stages) >= 2, "build in one stage, run in another"

    def resolve(base: str) -> str:
        return re.sub(r"\$\{?(\w+)\}?", lambda m: global_args.get(m.group(1), m.group(0)), base)

    for stage in stages:
        assert re.match(r"^python:3\.1[1-9]-slim", resolve(stage.base)), stage.base
    assert resolve(stages[0].base) == resolve(stages[-1].base), "the venv must run on the interpreter it was built with"


def test_runtime_stage_runs_the_deployment_command(stages: list[Stage]) -> None:
    runtime = stages[-1]
    ctr = deployment_container()
    assert exec_form(runtime.last("ENTRYPOINT")) == ["dra-migrate"]
    assert exec_form(runtime.last("CMD")) == ctr["args"], "keep CMD and deploy/base/deployment.yaml args equal"
    assert "command" not in ctr, "the Deployment relies on the image ENTRYPOINT"
    ports = {p["containerPort"] for p in ctr["ports"]}
    assert {int(p.split("/")[0]) for p in runtime.last("EXPOSE").split()} == ports


def test_runtime_stage_is_non_root_and_lean(stages: list[Stage]) -> None:
    runtime = stages[-1]
    user = runtime.last("USER")
    uid, _, gid = user.partition(":")
    assert uid == "65532" and gid in {"", "65532"}, f"numeric non-root USER, got {user}"
    run_as = deployment_container()["securityContext"]["runAsUser"]
    assert int(uid) == run_as

    env = env_of(runtime)
    assert env.get("PYTHONDONTWRITEBYTECODE") == "1"
    assert env.get("PYTHONUNBUFFERED") == "1"

    runs = " ".join(runtime.all("RUN"))
    for tool in ("apt-get install", "gcc", "build-essential", "pip install"):
        assert tool not in runs, f"runtime stage must not install build tools ({tool})"
    copies = runtime.all("COPY")
    assert copies and all(c.startswith("--from=") for c in copies), "runtime copies only build outputs"


def test_dockerignore_keeps_junk_and_secrets_out() -> None:
    patterns = {
        line.strip().rstrip("/")
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for required in (".git", ".venv", "tests", "deploy", "**/__pycache__", "**/*.key"):
        assert required in patterns, f".dockerignore must exclude {required}"
    for needed in ("pyproject.toml", "README.md", "LICENSE", "dra_migrate", "*", "**"):
        assert needed not in patterns, f".dockerignore must not exclude {needed} (pip wheel . needs it)"
