"""`pip install .` into a clean virtualenv: one import package, every run-time dependency declared.

Installing a non-editable copy outside the checkout is the only way to see what a user gets:
the checkout's own folders cannot leak onto the import path, and a dependency that is only in
the development venv shows up as an ImportError here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the project installed from the checkout; returns its bin directory."""
    home = tmp_path_factory.mktemp("clean-venv")
    venv.create(home / "venv", with_pip=True)
    bin_dir = home / "venv" / "bin"
    result = run([bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", ROOT], home)
    assert result.returncode == 0, result.stderr[-3000:]
    return bin_dir


def test_exactly_one_top_level_package(installed: Path) -> None:
    code = (
        "import importlib.metadata as m; files = m.distribution('dra-migrate').files or []; "
        "print(sorted({f.parts[0] for f in files if not f.parts[0].endswith('.dist-info') and f.parts[0] != '..'}))"
    )
    result = run([installed / "python", "-c", code], installed)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['dra_migrate']"


@pytest.mark.parametrize("name", ["webhook", "translator", "certs", "engine"])
def test_generic_names_are_not_importable_outside_the_checkout(installed: Path, name: str) -> None:
    result = run([installed / "python", "-c", f"import {name}"], installed)
    assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr


def test_every_module_imports_with_the_declared_dependencies(installed: Path) -> None:
    code = (
        "import importlib, pkgutil, dra_migrate\n"
        "for info in pkgutil.walk_packages(dra_migrate.__path__, 'dra_migrate.'):\n"
        "    if info.name != 'dra_migrate.__main__':\n"
        "        importlib.import_module(info.name)\n"
        "print('ok')\n"
    )
    result = run([installed / "python", "-c", code], installed)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_convert_runs_on_the_examples(installed: Path, tmp_path: Path) -> None:
    result = run(
        [installed / "dra-migrate", "convert", "--validate", "--output-dir", tmp_path / "out", ROOT / "examples"],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted(p.name for p in (ROOT / "examples").iterdir())
    assert "resourceClaimTemplateName" in (tmp_path / "out" / "gpu-pod.yaml").read_text(encoding="utf-8")


def test_version_and_module_entry_point(installed: Path) -> None:
    version = run([installed / "dra-migrate", "--version"], installed)
    assert version.returncode == 0 and version.stdout.startswith("dra-migrate ")
    module = run([installed / "python", "-m", "dra_migrate", "--version"], installed)
    assert module.stdout == version.stdout
    assert sys.version_info >= (3, 11)
