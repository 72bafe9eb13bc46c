"""Shared by the pipeline-integration tests: the real tools, and the converted output read back.

kustomize and helm are found as $KUSTOMIZE / $HELM, then on PATH, then in the cache the build
scripts fill (tests/translator/build-kustomize.sh, tests/deploy/build-helm.sh). Without one the
test that needs it skips, except with CI=true, where it fails.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, NoReturn

import kubernetes_validate
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent  # where this checkout's `dra-migrate` entry point is
Obj = dict[str, Any]


def cache_root() -> Path:
    return Path(os.environ.get("DRA_MIGRATE_CACHE") or Path.home() / ".cache" / "dra-migrate")


def _missing(message: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def find_tool(name: str) -> Path | None:
    configured = os.environ.get(name.upper())
    found = shutil.which(configured) if configured else shutil.which(name)
    if found is None:
        cached = sorted(p for p in cache_root().glob(f"{name}-v*/{name}") if os.access(p, os.X_OK))
        found = str(cached[-1]) if cached else None
    return Path(found) if found else None


def require_tool(name: str, build_script: str) -> Path:
    """The real `name` binary (kustomize or helm), or a skip naming the script that builds it."""
    found = find_tool(name)
    if found is None:
        _missing(f"{name} not found: set ${name.upper()}, put it on PATH, or build it with {build_script}")
    return found


def path_with(*directories: Path) -> str:
    """PATH with these directories first (this checkout's dra-migrate, the real tools)."""
    return os.pathsep.join([*(str(d) for d in directories), os.environ.get("PATH", "")])


def objects_of(stream: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all(stream) if isinstance(d, dict)]


def by_kind(objects: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o.get("kind") == kind]


def assert_valid(objects: list[Obj], kubernetes: str) -> None:
    """Every object against the release's OpenAPI schema, strictly (unknown fields are errors)."""
    assert objects, "no objects"
    for obj in objects:
        kubernetes_validate.validate(obj, kubernetes, strict=True)


def pod_spec(workload: Obj) -> Obj:
    spec: Obj = workload["spec"]
    return spec["template"]["spec"] if "template" in spec else spec


def assert_on_claims(workload: Obj, templates: list[Obj]) -> list[Obj]:
    """The workload asks for devices through claims only, each from a template in its namespace.
    Returns the templates its claims name."""
    spec = pod_spec(workload)
    for container in spec["containers"]:
        resources = container.get("resources", {})
        for section in ("limits", "requests"):
            assert not any(k.endswith("/gpu") for k in resources.get(section, {})), container
    namespace = workload["metadata"].get("namespace")
    known = {(t["metadata"].get("namespace"), t["metadata"]["name"]): t for t in templates}
    named = [known[(namespace, c["resourceClaimTemplateName"])] for c in spec["resourceClaims"]]
    claims = {c["name"] for c in spec["resourceClaims"]}
    used = {claim["name"] for container in spec["containers"] for claim in container["resources"]["claims"]}
    assert used <= claims and used, (used, claims)
    return named


def requested_count(template: Obj) -> int:
    [request] = template["spec"]["spec"]["devices"]["requests"]
    return int(request["exactly"]["count"])

