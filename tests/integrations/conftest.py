"""Fixtures of the pipeline-integration tests: the real kustomize and helm, and a plugin sidecar's environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from integration_support import VENV_BIN, find_tool, path_with, require_tool


@pytest.fixture(scope="session")
def kustomize() -> Path:
    return require_tool("kustomize", "tests/translator/build-kustomize.sh")


@pytest.fixture(scope="session")
def helm() -> Path:
    return require_tool("helm", "tests/deploy/build-helm.sh")


@pytest.fixture
def sidecar(tmp_path: Path, kustomize: Path) -> dict[str, str]:
    """The plugin sidecar's own environment: dra-migrate, kustomize and helm on PATH, helm's homes
    writable (as deploy/argocd-cmp sets them), nothing else of the test's configuration."""
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith(("ARGOCD_", "DRA_MIGRATE_"))
    }
    helm = find_tool("helm")  # the tests that render charts ask for the helm fixture, which skips without it
    environment["PATH"] = path_with(VENV_BIN, kustomize.parent, *([helm.parent] if helm else []))
    for part in ("cache", "config", "data"):
        environment[f"HELM_{part.upper()}_HOME"] = str(tmp_path / "helm" / part)
    return environment
