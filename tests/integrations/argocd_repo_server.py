"""A config management plugin run as Argo CD's repo-server and its argocd-cmp-server run one.

What is reproduced (argo-cd cmpserver/plugin/plugin.go, reposerver/repository/repository.go):
the repository arrives as a checkout in a work directory; `init` then `generate` run with the
application's directory as their working directory, each as `command[0]` with `command[1:] + args`
(no shell), with the sidecar's environment plus the build environment (ARGOCD_APP_*,
KUBE_VERSION, KUBE_API_VERSIONS), the Application's plugin env prefixed ARGOCD_ENV_, and its
parameters as ARGOCD_APP_PARAMETERS (JSON, `null` when none) and PARAM_<NAME>[_<i>|_<KEY>]. A
failing `init` stops the generation; `generate`'s stdout is the manifests, its stderr what the UI
shows on failure.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from integration_support import REPO_ROOT

PLUGIN_FILE = REPO_ROOT / "deploy" / "argocd-cmp" / "plugin.yaml"
REVISION = "8d7c2e5b0f3a6c1e9b4d7a2f5c8e1b3d6a9f2c4e"


@dataclass
class Application:
    """The parts of an Argo CD Application a plugin sees."""

    repository: Path  # the checkout the sidecar received
    path: str  # spec.source.path
    name: str = "gpu-app"
    namespace: str = "ml"
    kube_version: str = "v1.34.2"  # the destination cluster's, as Argo CD reports it
    api_versions: tuple[str, ...] = ("apps/v1", "v1", "resource.k8s.io/v1")
    env: dict[str, str] = field(default_factory=dict)  # spec.source.plugin.env
    parameters: list[dict[str, Any]] = field(default_factory=list)  # spec.source.plugin.parameters


@dataclass
class Step:
    returncode: int
    stdout: str
    stderr: str


def plugin_spec() -> dict[str, Any]:
    plugin = yaml.safe_load(PLUGIN_FILE.read_text(encoding="utf-8"))
    assert plugin["apiVersion"] == "argoproj.io/v1alpha1" and plugin["kind"] == "ConfigManagementPlugin"
    spec: dict[str, Any] = plugin["spec"]
    return spec


def _escaped(name: str) -> str:
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def build_environment(app: Application, sidecar: dict[str, str]) -> dict[str, str]:
    environment = dict(sidecar)
    environment.update(
        {
            "ARGOCD_APP_NAME": app.name,
            "ARGOCD_APP_NAMESPACE": app.namespace,
            "ARGOCD_APP_PROJECT_NAME": "default",
            "ARGOCD_APP_REVISION": REVISION,
            "ARGOCD_APP_REVISION_SHORT": REVISION[:7],
            "ARGOCD_APP_REVISION_SHORT_8": REVISION[:8],
            "ARGOCD_APP_SOURCE_PATH": app.path,
            "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/ml/platform.git",
            "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
            "KUBE_VERSION": app.kube_version,
            "KUBE_API_VERSIONS": ",".join(app.api_versions),
        }
    )
    environment.update({f"ARGOCD_ENV_{name}": value for name, value in app.env.items()})
    environment["ARGOCD_APP_PARAMETERS"] = json.dumps(app.parameters) if app.parameters else "null"
    for parameter in app.parameters:
        base = "PARAM_" + _escaped(parameter["name"])
        if "string" in parameter:
            environment[base] = parameter["string"]
        for index, item in enumerate(parameter.get("array", [])):
            environment[f"{base}_{index}"] = item
        for key, value in parameter.get("map", {}).items():
            environment[f"{base}_{_escaped(key)}"] = value
    return environment


def run_command(command: dict[str, Any], app_dir: Path, environment: dict[str, str]) -> Step:
    argv = [*command["command"], *command.get("args", [])]
    done = subprocess.run(argv, cwd=app_dir, env=environment, capture_output=True, text=True, timeout=300, check=False)
    return Step(done.returncode, done.stdout, done.stderr)


def generate_manifests(app: Application, sidecar: dict[str, str], *, init: bool = True) -> Step:
    """What the repo-server gets for the application: init (when the plugin has one), then generate."""
    spec = plugin_spec()
    app_dir = app.repository / app.path
    environment = build_environment(app, sidecar)
    if init and spec.get("init", {}).get("command"):
        step = run_command(spec["init"], app_dir, environment)
        if step.returncode != 0:
            return step
    return run_command(spec["generate"], app_dir, environment)
