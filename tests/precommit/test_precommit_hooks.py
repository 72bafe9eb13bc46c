"""The hooks of .pre-commit-hooks.yaml, run by the real `pre-commit` on real `git commit`s.

A snapshot of this checkout (what `pip install .` needs plus the hooks manifest) becomes a git
repository that a throwaway project names in its .pre-commit-config.yaml, exactly as users do.
pre-commit builds the hook's own virtualenv from it (once per module: PRE_COMMIT_HOME is shared)
and `git commit` runs the hook through the installed git hook:

- dra-migrate-diff fails the commit while a staged manifest still needs converting, and shows the
  unified diff; a manifest with nothing to convert, or one already converted, commits;
- dra-migrate-convert rewrites the staged file in place, which fails the commit until the result
  is staged;
- invalid YAML fails the commit with a message naming the file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOKS_MANIFEST = ROOT / ".pre-commit-hooks.yaml"
# What `pip install .` reads (pyproject.toml: readme, packages.find) plus the hooks manifest.
SNAPSHOT = ("pyproject.toml", "README.md", "dra_migrate", ".pre-commit-hooks.yaml")
COMMIT_TIMEOUT_S = 600  # the first commit builds the hook's virtualenv

GPU_POD = """\
# a training pod as it is written today
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
spec:
  containers:
    - name: trainer
      image: registry.example.com/trainer:1.0
      resources:
        limits:
          nvidia.com/gpu: 2 # two whole GPUs
"""

PLAIN_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: web
      image: registry.example.com/web:1.0
      resources:
        limits:
          cpu: "1"
"""

NOT_A_MANIFEST = """\
# CI settings: YAML, but no Kubernetes objects
on: [push]
jobs:
  test: {runs-on: ubuntu-latest}
"""


def _tool(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        message = f"{name} is not installed (pip install -e '.[test]')"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _output(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def _shown(result: subprocess.CompletedProcess[str]) -> str:
    """What the user sees: git prints the hook's report on stderr, its own summary on stdout."""
    return result.stdout + result.stderr


@dataclass(frozen=True)
class HookRepo:
    path: Path
    rev: str


@pytest.fixture(scope="module")
def git_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """git and pre-commit isolated from the user's configuration; one PRE_COMMIT_HOME per module."""
    home = tmp_path_factory.mktemp("home")
    git = _tool("git")
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "dra-migrate tests",
        "GIT_AUTHOR_EMAIL": "tests@dra-migrate.invalid",
        "GIT_COMMITTER_NAME": "dra-migrate tests",
        "GIT_COMMITTER_EMAIL": "tests@dra-migrate.invalid",
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # `git commit` runs the hook script, which calls the pre-commit of this virtualenv.
        "PATH": f"{Path(_tool('pre-commit')).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "PRE_COMMIT", "NO_COLOR"):
        env.pop(key, None)
    assert Path(git).is_file()
    return env


def _git(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = _run([_tool("git"), *args], cwd, env)
    assert result.returncode == 0, f"git {' '.join(args)}: {_output(result)}"
    return result


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory, git_env: dict[str, str]) -> HookRepo:
    """This checkout's working tree (not its last commit), committed into a fresh repository."""
    path = tmp_path_factory.mktemp("hook-repo")
    for name in SNAPSHOT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, path / name)
    _git(git_env, path, "init", "--quiet", "--initial-branch=main")
    _git(git_env, path, "add", "--all")
    _git(git_env, path, "commit", "--quiet", "--message", "snapshot")
    rev = _git(git_env, path, "rev-parse", "HEAD").stdout.strip()
    return HookRepo(path, rev)


@dataclass
class Project:
    """A repository of manifests that uses the hook."""

    path: Path
    env: dict[str, str]

    def write(self, name: str, text: str) -> Path:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def stage(self, *names: str) -> None:
        _git(self.env, self.path, "add", "--", *names)

    def commit(self, message: str = "change") -> subprocess.CompletedProcess[str]:
        return _run([_tool("git"), "commit", "--message", message], self.path, self.env, COMMIT_TIMEOUT_S)

    def commits(self) -> int:
        result = _run([_tool("git"), "rev-list", "--count", "HEAD"], self.path, self.env)
        return int(result.stdout) if result.returncode == 0 else 0


def _project(tmp_path: Path, env: dict[str, str], repo: HookRepo, hook_id: str) -> Project:
    path = tmp_path / "manifests"
    path.mkdir()
    _git(env, path, "init", "--quiet", "--initial-branch=main")
    config = {"repos": [{"repo": str(repo.path), "rev": repo.rev, "hooks": [{"id": hook_id}]}]}
    (path / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = _run([_tool("pre-commit"), "install"], path, env)
    assert result.returncode == 0, _output(result)
    project = Project(path, env)
    project.stage(".pre-commit-config.yaml")
    return project


@pytest.fixture
def diff_project(tmp_path: Path, git_env: dict[str, str], hook_repo: HookRepo) -> Project:
    return _project(tmp_path, git_env, hook_repo, "dra-migrate-diff")


@pytest.fixture
def convert_project(tmp_path: Path, git_env: dict[str, str], hook_repo: HookRepo) -> Project:
    return _project(tmp_path, git_env, hook_repo, "dra-migrate-convert")


def test_manifest_declares_both_hooks() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS_MANIFEST.read_text(encoding="utf-8"))}
    assert set(hooks) == {"dra-migrate-diff", "dra-migrate-convert"}
    assert hooks["dra-migrate-diff"]["entry"] == "dra-migrate diff"
    assert hooks["dra-migrate-convert"]["entry"] == "dra-migrate convert --in-place"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert set(hook["types_or"]) == {"yaml", "json"}


def test_diff_hook_fails_a_commit_that_needs_converting_and_shows_the_diff(diff_project: Project) -> None:
    diff_project.write("apps/trainer.yaml", GPU_POD)
    diff_project.stage("apps/trainer.yaml")
    result = diff_project.commit()
    text = _output(result)
    assert result.returncode != 0, text
    assert diff_project.commits() == 0, "the commit must not be made"
    assert "dra-migrate diff" in _shown(result) and "Failed" in _shown(result), text
    assert "- exit code: 1" in _shown(result), text  # 1 = changes needed (2 would be errors)
    # The unified diff of the conversion is in the hook's output.
    assert "--- a/apps/trainer.yaml" in _shown(result), text
    assert "-          nvidia.com/gpu: 2 # two whole GPUs" in _shown(result), text
    assert "+kind: ResourceClaimTemplate" in _shown(result), text
    assert "deviceClassName: gpu.nvidia.com" in _shown(result), text
    # The file itself is untouched: `diff` only reports.
    assert (diff_project.path / "apps/trainer.yaml").read_text(encoding="utf-8") == GPU_POD


def test_diff_hook_passes_manifests_with_nothing_to_convert(diff_project: Project) -> None:
    diff_project.write("apps/web.yaml", PLAIN_POD)
    diff_project.write(".github/ci.yml", NOT_A_MANIFEST)
    diff_project.stage("apps/web.yaml", ".github/ci.yml")
    result = diff_project.commit()
    assert result.returncode == 0, _output(result)
    assert "dra-migrate diff" in _shown(result) and "Passed" in _shown(result), _output(result)
    assert diff_project.commits() == 1


def test_diff_hook_passes_an_already_converted_manifest(diff_project: Project, tmp_path: Path) -> None:
    converted = subprocess.run(
        [_tool("dra-migrate"), "convert", "-"], input=GPU_POD, capture_output=True, text=True, check=True
    ).stdout
    assert "resourceClaimTemplateName" in converted
    diff_project.write("apps/trainer.yaml", converted)
    diff_project.stage("apps/trainer.yaml")
    result = diff_project.commit()
    assert result.returncode == 0, _output(result)
    assert "Passed" in _shown(result), _output(result)


def test_diff_hook_fails_on_invalid_yaml_and_names_the_file(diff_project: Project) -> None:
    diff_project.write("apps/broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n")
    diff_project.stage("apps/broken.yaml")
    result = diff_project.commit()
    text = _output(result)
    assert result.returncode != 0, text
    assert "- exit code: 2" in _shown(result), text
    assert "apps/broken.yaml" in _shown(result), text
    assert "Traceback" not in _shown(result), text


def test_convert_hook_rewrites_the_file_then_the_staged_result_commits(convert_project: Project) -> None:
    path = convert_project.write("apps/trainer.yaml", GPU_POD)
    convert_project.stage("apps/trainer.yaml")
    first = convert_project.commit()
    assert first.returncode != 0, _output(first)
    assert "files were modified by this hook" in _shown(first), _output(first)
    rewritten = path.read_text(encoding="utf-8")
    assert "nvidia.com/gpu: 2" not in rewritten
    assert "resourceClaimTemplateName" in rewritten and "kind: ResourceClaimTemplate" in rewritten
    assert rewritten.startswith("# a training pod as it is written today\n"), "comments are kept"

    convert_project.stage("apps/trainer.yaml")
    second = convert_project.commit()
    assert second.returncode == 0, _output(second)
    assert convert_project.commits() == 1


GPU_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
      - name: server
        image: vllm
        resources:
          limits:
            nvidia.com/gpu: 2
"""

FOUR_GPUS_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  template:
    spec:
      containers:
      - name: server
        resources:
          limits:
            nvidia.com/gpu: 4
"""


def test_convert_hook_refuses_a_staged_base_that_an_unstaged_overlay_patches(
    convert_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pre-commit passes only the staged base; the overlay in the repository patches the same Deployment
    to 4 GPUs. Converting the base alone would render 4 device-plugin GPUs plus a 2-GPU claim: the hook
    refuses, names the overlay and its patch, and rewrites nothing."""
    from kubectl import require_kubectl

    convert_project.env["DRA_MIGRATE_KUSTOMIZE"] = str(require_kubectl())
    convert_project.write("base/kustomization.yaml", "resources:\n- deploy.yaml\n")
    base = convert_project.write("base/deploy.yaml", GPU_DEPLOYMENT)
    convert_project.write("overlays/prod/kustomization.yaml", "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n")
    convert_project.write("overlays/prod/gpus.yaml", FOUR_GPUS_PATCH)
    convert_project.stage("overlays")  # the repository as it is: the overlay committed before the hook
    _git(convert_project.env, convert_project.path, "commit", "--no-verify", "--quiet", "--message", "overlay")
    convert_project.stage("base")
    result = convert_project.commit("base")
    text = _output(result)
    assert result.returncode != 0, text
    assert "- exit code: 2" in _shown(result), text
    assert "overlays/prod/kustomization.yaml" in _shown(result) and "overlays/prod/gpus.yaml" in _shown(result), text
    assert base.read_text(encoding="utf-8") == GPU_DEPLOYMENT, "the base must not be rewritten"
    assert not (convert_project.path / "base" / "dra-migrate-templates.yaml").exists()
