"""Shapes whole public repositories have that a tree of manifests alone does not: YAML of other tools with
application tags (mkdocs.yml, CloudFormation), and a directory reached through a symbolic link as well as
under its own name (jobset's `examples -> site/static/examples`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from translator_cli_support import Runner
from trees import write_tree

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
  - name: trainer
    image: cuda
    resources:
      limits:
        nvidia.com/gpu: 1
"""

MKDOCS = """\
site_name: docs
markdown_extensions:
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
"""

CLOUDFORMATION = """\
Resources:
  Bucket:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: !Join [-, [a, !Ref Suffix]]
"""


def test_yaml_with_application_tags_is_skipped_not_an_error(run_cli: Runner, tmp_path: Path) -> None:
    write_tree(tmp_path, {"mkdocs.yml": MKDOCS, "infra/stack.yaml": CLOUDFORMATION, "pods/pod.yaml": GPU_POD})
    result = run_cli("diff", "--report", "json", str(tmp_path))
    assert result.code == 1, result.stderr
    rows = {(Path(r["file"]).name, r["rule"]) for r in json.loads(result.stderr)["findings"]}
    assert ("mkdocs.yml", "skipped") in rows and ("stack.yaml", "skipped") in rows
    assert not [r for r in rows if r[1] == "parse"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_directory_linked_inside_the_tree_is_named_by_its_own_path(run_cli: Runner, tmp_path: Path) -> None:
    """The diff names the path git tracks, so `git apply` takes it."""
    repository = tmp_path / "repo"
    write_tree(repository, {"site/examples/pod.yaml": GPU_POD})
    (repository / "examples").symlink_to("site/examples", target_is_directory=True)
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    result = run_cli("diff", "--report", "json", str(repository))
    assert result.code == 1, result.stderr
    assert f"--- a/{repository}/site/examples/pod.yaml" in result.stdout
    assert "examples/pod.yaml" not in result.stdout.replace("site/examples/pod.yaml", "")
    patch = tmp_path / "change.diff"
    patch.write_text(result.stdout.replace(f"{repository}/", ""), encoding="utf-8")
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=repository, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
