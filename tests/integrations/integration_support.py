"""Shared by the pipeline-integration tests: the real tools, and the converted output read back.

kustomize and helm are found as $KUSTOMIZE / $HELM, then on PATH, then in the cache the build
scripts fill (tests/translator/build-kustomize.sh, tests/deploy/build-helm.sh). Without one the
test that needs it skips, except with CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Any, NoReturn

import jsonschema
import kubernetes_validate
import pytest
import xmlschema
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = REPO_ROOT / "tests" / "reports" / "schemas"  # SARIF 2.1.0's JSON schema, the Jenkins xunit JUnit XSD
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


def assert_sarif(log: Obj) -> None:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)


def assert_junit(path: Path) -> None:
    xmlschema.XMLSchema(SCHEMAS / "junit-10.xsd").validate(path)


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


# --------------------------------------------------------------------------- a CI job's checkout and Python


def project_copy(destination: Path) -> Path:
    """This checkout's working tree as a CI host fetches it (tracked and new files, nothing ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def job_python(directory: Path) -> Path:
    """A fresh virtualenv standing for the job's Python (setup-python's, the job image's): installing
    dra-migrate into it leaves the test's own environment alone. It sees the test environment's
    packages through a .pth file, so `pip install` finds dra-migrate's dependencies already there
    and builds only dra-migrate itself. Returns its bin directory, to put first on PATH."""
    venv.EnvBuilder(with_pip=True).create(directory)
    bin_directory = directory / "bin"
    purelib = subprocess.run(
        [str(bin_directory / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return bin_directory


# --------------------------------------------------------------------------- a pull request's repository

TRAINING = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
  namespace: ml
spec:
  selector:
    matchLabels: {app: trainer}
  template:
    metadata:
      labels: {app: trainer}
    spec:
      containers:
        - name: trainer
          image: registry.example.com/trainer:2.1
          resources:
            limits:
              nvidia.com/gpu: 2
"""
WEB = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: ml
spec:
  ports:
    - port: 80
"""
# requests and limits of the device differ: a conversion error, the pod left as it is
SERVING = """\
apiVersion: v1
kind: Pod
metadata:
  name: serving
  namespace: ml
spec:
  containers:
    - name: server
      image: registry.example.com/serve:1.0
      resources:
        requests:
          nvidia.com/gpu: 1
        limits:
          nvidia.com/gpu: 2
"""


def pull_request_repository(root: Path, *, with_error: bool) -> Path:
    """A repository as a pull request leaves it: a GPU Deployment to convert, a Service that needs
    nothing, and (`with_error`) a Pod that cannot be converted."""
    files = {"deploy/training/deployment.yaml": TRAINING, "deploy/web/service.yaml": WEB}
    if with_error:
        files["deploy/serving/pod.yaml"] = SERVING
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def line_of(path: Path, text: str, after: str = "") -> int:
    """The 1-based line of the first line holding `text` (after the first holding `after`)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines) if i >= start and text in line) + 1
