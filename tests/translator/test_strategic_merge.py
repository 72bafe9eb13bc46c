"""The strategic merge the patch planner models (translator.conversion.strategic.merge) is the merge the real
kustomize does: each case is built by kustomize and compared with the model, field for field."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from trees import write_tree

from dra_migrate.translator.conversion.strategic import is_keyed, merge

POD_SPEC = {
    "tolerations": [{"key": "a", "operator": "Exists"}],
    "resourceClaims": [
        {"name": "c1", "resourceClaimTemplateName": "t1"},
        {"name": "c2", "resourceClaimTemplateName": "t2"},
    ],
    "initContainers": [{"name": "warm", "image": "x"}, {"name": "proxy", "image": "x", "restartPolicy": "Always"}],
    "containers": [
        {"name": "a", "image": "x", "resources": {"claims": [{"name": "c1"}], "limits": {"cpu": "1"}}},
        {"name": "b", "image": "x", "resources": {"claims": [{"name": "c2"}]}},
        {"name": "c", "image": "x", "env": [{"name": "A", "value": "1"}]},
    ],
}


def _deployment(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": spec}},
    }


def _job(spec: dict[str, Any]) -> dict[str, Any]:
    replica = {"template": {"spec": spec}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "d"},
        "spec": {"pytorchReplicaSpecs": {"Worker": replica}},
    }


CASES: dict[str, dict[str, Any]] = {
    "patch-items-first-then-the-base-order": {
        "containers": [{"name": "c", "image": "y"}, {"name": "n", "image": "y"}, {"name": "b", "image": "y"}]
    },
    "null-deletes-and-leaves-an-empty-map": {
        "containers": [{"name": "a", "resources": {"limits": {"cpu": None}, "claims": None}}]
    },
    "an-empty-map-is-created": {"containers": [{"name": "b", "resources": {"limits": {}}}]},
    "delete-directives": {
        "containers": [{"name": "b", "$patch": "delete"}, {"name": "a", "resources": {"$patch": "delete"}}]
    },
    "replaced-lists": {
        "tolerations": [{"key": "b", "operator": "Exists"}],
        "resourceClaims": [{"name": "c3", "resourceClaimTemplateName": "t3"}],
        "containers": [{"name": "a", "resources": {"claims": [{"name": "c3"}]}}],
    },
    "init-containers-and-env-by-name": {
        "initContainers": [{"name": "proxy", "image": "y"}],
        "containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}],
    },
}


@pytest.mark.parametrize("kind", ["built-in", "custom-resource"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_model_merges_as_kustomize_does(kustomize: Path, tmp_path: Path, case: str, kind: str) -> None:
    build = _deployment if kind == "built-in" else _job
    base, patch = build(POD_SPEC), build(CASES[case])
    write_tree(
        tmp_path,
        {
            "base/kustomization.yaml": "resources:\n- o.yaml\n",
            "base/o.yaml": yaml.safe_dump(base),
            "o/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: p.yaml\n",
            "o/p.yaml": yaml.safe_dump(patch),
        },
    )
    done = subprocess.run(
        [str(kustomize), "kustomize", str(tmp_path / "o")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert merge(base, patch, is_keyed(base)) == yaml.safe_load(done.stdout)
