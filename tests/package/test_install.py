"""The wheel `python -m build` makes, installed into a clean virtualenv: what a user of `pip install`
or `pipx install` gets.

The wheel is built from the sdist (what `build` does by default), so a file the sdist leaves out is
missing here too. It is installed without the checkout: no editable install, and every command runs
from a scratch directory with PYTHONPATH unset, so the checkout cannot leak onto the import path and
a dependency that is only in the development venv shows up as an ImportError. The commands that read
data at run time (schemas for --validate, the release table, the plan's HTML page, certificates, the
webhook's match conditions) run from the installed copy, so a file the wheel lacks fails them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from kubectl import find_kubectl

ROOT = Path(__file__).resolve().parents[2]

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: cuda
  namespace: ml
spec:
  containers:
  - name: cuda
    image: registry.k8s.io/pause:3.10
    resources:
      limits:
        nvidia.com/gpu: 2  # two whole GPUs
"""


class Distribution(NamedTuple):
    wheel: Path
    sdist: Path


class Installed(NamedTuple):
    bin: Path  # the clean venv's bin directory
    work: Path  # a scratch directory outside the checkout, the commands' working directory


def clean_environment(**extra: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**environment, "NO_COLOR": "1", **extra}


def run(
    argv: list[str | Path], cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env or clean_environment(),
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Distribution:
    """`python -m build`: the sdist, then the wheel built from it, in an isolated build environment."""
    out = tmp_path_factory.mktemp("dist")
    result = run([sys.executable, "-m", "build", "--outdir", out, ROOT], out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return Distribution(wheels[0], sdists[0])


@pytest.fixture(scope="module")
def installed(dist: Distribution, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv with the wheel installed (not the checkout); its bin directory and a scratch directory."""
    home = tmp_path_factory.mktemp("clean-venv")
    venv.create(home / "venv", with_pip=True)
    bin_dir = home / "venv" / "bin"
    result = run(
        [bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", dist.wheel], home
    )
    assert result.returncode == 0, result.stderr[-3000:]
    work = home / "work"
    work.mkdir()
    return Installed(bin_dir, work)


def test_the_wheel_and_sdist_carry_the_license(dist: Distribution) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = wheel.namelist()
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(metadata_name).decode()
        license_name = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        assert wheel.read(license_name) == (ROOT / "LICENSE").read_bytes()
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata
    with tarfile.open(dist.sdist) as sdist:
        members = {Path(m.name).relative_to(Path(m.name).parts[0]).as_posix() for m in sdist.getmembers()}
    assert {"LICENSE", "README.md", "pyproject.toml", "dra_migrate/__init__.py", "dra_migrate/py.typed"} <= members


def test_the_wheel_holds_every_file_of_the_package(dist: Distribution) -> None:
    """Every file the package has in the checkout (code and data alike) is in the wheel."""
    tracked = subprocess.run(
        ["git", "ls-files", "dra_migrate"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if not tracked:
        pytest.skip("needs a git checkout to list the package's files")
    with zipfile.ZipFile(dist.wheel) as wheel:
        in_wheel = set(wheel.namelist())
    assert sorted(set(tracked) - in_wheel) == []


def test_exactly_one_top_level_package(installed: Installed) -> None:
    code = (
        "import importlib.metadata as m; files = m.distribution('dra-migrate').files or []; "
        "print(sorted({f.parts[0] for f in files if not f.parts[0].endswith('.dist-info') and f.parts[0] != '..'}))"
    )
    result = run([installed.bin / "python", "-c", code], installed.work)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['dra_migrate']"


def test_the_package_is_imported_from_the_venv_not_the_checkout(installed: Installed) -> None:
    code = "import sys, dra_migrate; print(dra_migrate.__file__); print('\\n'.join(sys.path))"
    result = run([installed.bin / "python", "-c", code], installed.work)
    assert result.returncode == 0, result.stderr
    module, *path = result.stdout.splitlines()
    assert Path(module).is_relative_to(installed.bin.parent), module
    assert not any(entry and Path(entry).resolve().is_relative_to(ROOT) for entry in path), path


@pytest.mark.parametrize("name", ["webhook", "translator", "certs", "engine"])
def test_generic_names_are_not_importable_outside_the_checkout(installed: Installed, name: str) -> None:
    result = run([installed.bin / "python", "-c", f"import {name}"], installed.work)
    assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr


def test_every_module_imports_with_the_declared_dependencies(installed: Installed) -> None:
    code = (
        "import importlib, pkgutil, dra_migrate\n"
        "for info in pkgutil.walk_packages(dra_migrate.__path__, 'dra_migrate.'):\n"
        "    if info.name != 'dra_migrate.__main__':\n"
        "        importlib.import_module(info.name)\n"
        "print('ok')\n"
    )
    result = run([installed.bin / "python", "-c", code], installed.work)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_version_help_and_module_entry_point(installed: Installed) -> None:
    version = run([installed.bin / "dra-migrate", "--version"], installed.work)
    assert version.returncode == 0 and version.stdout == "dra-migrate 0.1.0\n", version
    module = run([installed.bin / "python", "-m", "dra_migrate", "--version"], installed.work)
    assert module.stdout == version.stdout
    helped = run([installed.bin / "dra-migrate", "--help"], installed.work)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: dra-migrate ")
    for command in ("convert", "diff", "krm", "plan", "serve", "certs", "webhook"):
        assert command in helped.stdout
    assert sys.version_info >= (3, 11)


def test_convert_a_gpu_pod_with_validation(installed: Installed) -> None:
    """stdin to stdout, checked against the target release's schema (kubernetes-validate's data)."""
    result = run(
        [installed.bin / "dra-migrate", "convert", "--validate", "--target-version", "1.34", "-"],
        installed.work,
        stdin=GPU_POD,
    )
    assert result.returncode == 0, result.stderr
    pod, template = yaml.safe_load_all(result.stdout)
    assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "cuda-gpu"}]}
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert "# two whole GPUs" not in result.stdout  # the count's line is gone with its comment


def test_convert_runs_on_the_examples(installed: Installed, tmp_path: Path) -> None:
    """As `make demo` runs it: examples/krm converts at render time, so it is left out (and copied as it is)."""
    output = tmp_path / "out"
    result = run(
        [
            installed.bin / "dra-migrate",
            "convert",
            "--validate",
            "--exclude",
            "krm",
            "--output-dir",
            output,
            ROOT / "examples",
        ],
        installed.work,
    )
    assert result.returncode == 0, result.stderr
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted(p.name for p in (ROOT / "examples").iterdir())
    assert "resourceClaimTemplateName" in (tmp_path / "out" / "gpu-pod.yaml").read_text(encoding="utf-8")


def test_the_commands_that_read_package_data_run_from_the_venv(installed: Installed, tmp_path: Path) -> None:
    """The release table (a 1.32 downgrade), the plan's pages, certificates, match conditions, the KRM function."""
    dra = installed.bin / "dra-migrate"
    downgraded = run([dra, "convert", "--target-version", "1.32", "-"], installed.work, stdin=GPU_POD)
    assert downgraded.returncode == 0, downgraded.stderr
    assert "resource.k8s.io/v1beta1" in downgraded.stdout

    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "version.yaml").write_text("serverVersion: {gitVersion: v1.36.2}\n", encoding="utf-8")
    (snapshot / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-1, labels: {node.kubernetes.io/instance-type: a100}}\n"
        "status: {capacity: {nvidia.com/gpu: '8'}, allocatable: {nvidia.com/gpu: '8'}}\n",
        encoding="utf-8",
    )
    (snapshot / "pods.yaml").write_text(GPU_POD, encoding="utf-8")
    page = tmp_path / "plan.html"
    plan = run(
        [
            dra,
            "plan",
            "--cluster",
            snapshot,
            "--report",
            "html",
            "--report-file",
            page,
            "--write",
            tmp_path / "cluster-side",
        ],
        installed.work,
    )
    assert plan.returncode == 0, plan.stderr
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html>")
    assert (tmp_path / "cluster-side" / "deviceclasses.yaml").is_file()

    certs = run(
        [dra, "certs", "generate", "--service", "dra-migrate", "--namespace", "dra-migrate", "--out", tmp_path / "tls"],
        installed.work,
    )
    assert certs.returncode == 0, certs.stderr
    assert {"ca.crt", "ca.key", "tls.crt", "tls.key"} <= {p.name for p in (tmp_path / "tls").iterdir()}

    conditions = run([dra, "webhook", "match-conditions"], installed.work)
    assert conditions.returncode == 0, conditions.stderr
    assert "nvidia.com/gpu" in conditions.stdout

    resource_list = yaml.safe_dump(
        {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [yaml.safe_load(GPU_POD)]}
    )
    krm = run([dra, "krm"], installed.work, stdin=resource_list)
    assert krm.returncode == 0, krm.stderr
    kinds = [item["kind"] for item in yaml.safe_load(krm.stdout)["items"]]
    assert kinds == ["Pod", "ResourceClaimTemplate"]


def kubectl_binary() -> Path:
    """kubectl on PATH (as a user runs it), else the e2e suite's; in CI one of them must be there."""
    on_path = shutil.which("kubectl")
    found = Path(on_path) if on_path else find_kubectl()
    if found is None:
        message = "kubectl not found on PATH nor in the e2e cache (tests/e2e/build-control-plane.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def test_kubectl_runs_it_as_a_plugin(installed: Installed) -> None:
    """`kubectl dra-migrate`: kubectl finds the installed kubectl-dra_migrate on PATH and runs it."""
    kubectl = kubectl_binary()
    environment = clean_environment(PATH=f"{installed.bin}{os.pathsep}{kubectl.parent}{os.pathsep}/usr/bin:/bin")
    (installed.work / "pod.yaml").write_text(GPU_POD, encoding="utf-8")
    listed = run([kubectl, "plugin", "list"], installed.work, env=environment)
    assert str(installed.bin / "kubectl-dra_migrate") in listed.stdout, listed.stdout + listed.stderr
    helped = run([kubectl, "dra-migrate", "--help"], installed.work, env=environment)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: kubectl dra-migrate "), helped
    diff = run([kubectl, "dra-migrate", "diff", "pod.yaml"], installed.work, env=environment)
    assert diff.returncode == 1, diff.stderr  # 1: changes needed
    assert "-        nvidia.com/gpu: 2  # two whole GPUs" in diff.stdout, diff.stdout
    assert "+  - name: cuda-gpu" in diff.stdout, diff.stdout
    assert "+kind: ResourceClaimTemplate" in diff.stdout, diff.stdout
    assert (installed.work / "pod.yaml").read_text(encoding="utf-8") == GPU_POD  # diff writes nothing
