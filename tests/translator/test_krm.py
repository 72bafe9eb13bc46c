"""`dra-migrate krm` as a KRM function: the real CLI on ResourceLists, and the real kustomize running
examples/krm as an exec function.

kustomize is found via $KUSTOMIZE, then PATH, then the cache that tests/translator/build-kustomize.sh
fills (`kubectl kustomize` has no --enable-exec). Without one that test skips, except with CI=true,
where it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubectl import require_standalone_kustomize

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "krm"


def _krm(resource_list: Any) -> subprocess.CompletedProcess[str]:
    text = resource_list if isinstance(resource_list, str) else yaml.safe_dump(resource_list)
    return subprocess.run(
        [sys.executable, "-m", "dra_migrate", "krm"], input=text, capture_output=True, text=True, check=False
    )


def _gpu_pod(name: str, path: str, gpus: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "annotations": {"config.kubernetes.io/index": "0", "internal.config.kubernetes.io/path": path},
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus, "example.org/x": 1}}}
            ]
        },
    }


def test_items_are_converted_templates_join_them_and_findings_become_results() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    done = _krm(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [_gpu_pod("a", "a.yaml"), service, _gpu_pod("b", "b.yaml")],
            "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"targetVersion": "1.33"}},
        }
    )
    assert done.returncode == 0, done.stderr
    out = yaml.safe_load(done.stdout)
    assert (out["apiVersion"], out["kind"]) == ("config.kubernetes.io/v1", "ResourceList")
    kinds = [(i["kind"], i["metadata"]["name"]) for i in out["items"]]
    template = out["items"][1]
    assert kinds == [
        ("Pod", "a"),
        ("ResourceClaimTemplate", template["metadata"]["name"]),
        ("Service", "web"),
        ("Pod", "b"),
    ]
    assert template["apiVersion"] == "resource.k8s.io/v1beta2"  # target 1.33
    assert template["metadata"]["namespace"] == "ml"
    assert template["metadata"]["annotations"]["internal.config.kubernetes.io/path"] == "a.yaml"
    pod = out["items"][0]
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert pod["metadata"]["annotations"]["internal.config.kubernetes.io/path"] == "a.yaml"
    assert out["items"][2] == service
    unmapped = [r for r in out["results"] if r["tags"]["rule"] == "unmapped-resource"]
    assert [r["resourceRef"]["name"] for r in unmapped] == ["a", "b"]
    assert unmapped[0]["severity"] == "warning"
    assert unmapped[0]["resourceRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "a", "namespace": "ml"}
    assert unmapped[0]["field"] == {"path": 'spec.containers[0].resources.limits["example.org/x"]'}
    assert unmapped[0]["file"] == {"path": "a.yaml"}
    assert {r["severity"] for r in out["results"]} == {"info", "warning"}


def test_errors_are_results_and_schema_checks_follow_the_function_config() -> None:
    bad = _gpu_pod("bad", "bad.yaml", gpus=40)  # over the 32-device claim limit
    bad["spec"]["containers"][0]["bogus"] = 1
    config = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"validate": "true"}}
    done = _krm(
        {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [bad], "functionConfig": config}
    )
    assert done.returncode == 0, done.stderr
    results = yaml.safe_load(done.stdout)["results"]
    assert {(r["tags"]["rule"], r["severity"]) for r in results} >= {("too-many-devices", "error"), ("schema", "error")}


def _list_with_pod_spec(spec: str) -> str:
    return (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        f"- apiVersion: v1\n  kind: Pod\n  metadata: {{name: p}}\n  spec: {spec}\n"
    )


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("kind: [", "invalid YAML at line"),
        # the translator's bounds (translator/reading/limits.py): its walk, and libyaml's refusal beyond 1,000 levels
        (_list_with_pod_spec("{overhead: " + "[" * 700 + "]" * 700 + "}"), "nested deeper than 500 levels"),
        (_list_with_pod_spec("{overhead: " + "[" * 1200 + "]" * 1200 + "}"), "nested deeper than 500 levels"),
        (_list_with_pod_spec("{nodeSelector: &loop {a: *loop}}"), "contains an alias of itself"),
        ("apiVersion: v1\nkind: Pod\n", "expected a ResourceList"),
        (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n"
            "  kind: ConfigMap\n  data: {targetVersion: '1.2'}\n",
            "targetVersion",
        ),
        (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n"
            "  kind: ConfigMap\n  data: {tagetVersion: '1.34'}\n",
            "unknown keys tagetVersion",
        ),
        (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n"
            "  kind: ConfigMap\n  data: targetVersion=1.34\n",
            "functionConfig: data: expected a map of strings",
        ),
        (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n"
            "  kind: ConfigMap\n  data: [targetVersion]\n",
            "functionConfig: data: expected a map of strings, not a list",
        ),
        (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n"
            "  kind: ConfigMap\n  data: {targetVersion: ''}\n",
            "data.targetVersion: empty",
        ),
    ],
)
def test_bad_input_is_a_clear_error(stdin: str, message: str) -> None:
    done = _krm(stdin)
    assert done.returncode == 2 and not done.stdout
    assert message in done.stderr and "Traceback" not in done.stderr


def test_kustomize_runs_the_example_as_an_exec_function() -> None:
    kustomize = require_standalone_kustomize()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [kustomize, "build", "--enable-alpha-plugins", "--enable-exec", str(EXAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    objects = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(done.stdout)}
    job = objects[("Job", "finetune")]
    [(_, template_name)] = [key for key in objects if key[0] == "ResourceClaimTemplate"]
    template = objects[("ResourceClaimTemplate", template_name)]
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["resourceClaims"] == [{"name": "trainer-gpu", "resourceClaimTemplateName": template_name}]
    assert "nvidia.com/gpu" not in pod_spec["containers"][0]["resources"]["limits"]
    assert template["metadata"]["namespace"] == job["metadata"]["namespace"] == "ml-team"
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
