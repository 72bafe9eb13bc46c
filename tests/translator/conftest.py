"""Shared helpers for the translator tests: run the CLI in-process and capture its streams."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import corpus as shared_corpus
import pytest
from kubectl import require_kubectl
from translator_cli_support import CliResult, Runner

from dra_migrate.cli import main
from dra_migrate.translator import driver


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    # One process: forking the test process (its threads, its memory) for workers is not what a
    # user's run does; tests/translator/test_parallel.py runs --jobs through the real CLI.
    monkeypatch.setattr(driver, "default_jobs", lambda: 1)

    def run(*args: str, stdin: str = "") -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        code = main(list(args))
        return CliResult(code, out.getvalue(), err.getvalue())

    yield run


@pytest.fixture(scope="session")
def corpus() -> Path:
    return shared_corpus.require()


@pytest.fixture
def kustomize(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The real kustomize (kubectl's) for render verification; the test skips where there is none."""
    kubectl = require_kubectl()
    monkeypatch.setenv("DRA_MIGRATE_KUSTOMIZE", str(kubectl))
    yield kubectl
