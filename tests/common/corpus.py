"""Where the shared corpus of real manifests lives, for tests and benchmarks alike.

`../shared/corpus` beside the checkout, or the directory `DRA_MIGRATE_CORPUS` names. A clone without
it still runs: what needs the corpus skips with a message naming the missing directory (CI has the
corpus, and `tests/test_corpus_present.py` fails there if it is gone).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT_VARIABLE = "DRA_MIGRATE_CORPUS"
CORPUS = Path(os.environ.get(ENVIRONMENT_VARIABLE) or REPO_ROOT.parent / "shared" / "corpus")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def missing(part: str = "") -> str | None:
    """Why the corpus (or one of its directories) cannot be used, or None when it can."""
    directory = CORPUS / part if part else CORPUS
    if directory.is_dir():
        return None
    return f"shared corpus not found: {directory} is missing (put it beside the checkout or set {ENVIRONMENT_VARIABLE})"


def require(part: str = "") -> Path:
    """The corpus directory, or a pytest skip that names what is missing."""
    reason = missing(part)
    if reason is not None:
        import pytest

        pytest.skip(reason)
    return CORPUS / part if part else CORPUS


def require_module(part: str = "") -> None:
    """Skip the whole calling test module, before it collects anything, when the corpus is absent."""
    reason = missing(part)
    if reason is not None:
        import pytest

        pytest.skip(reason, allow_module_level=True)


def manifests(part: str, recursive: bool = True, suffixes: Iterable[str] = MANIFEST_SUFFIXES) -> list[Path]:
    """The manifest files of a corpus directory, sorted; none when it is absent."""
    directory = CORPUS / part
    if not directory.is_dir():
        return []
    wanted = tuple(suffixes)
    found = directory.rglob("*") if recursive else directory.glob("*")
    return sorted(p for p in found if p.is_file() and p.suffix in wanted)


def params(values: list[Any], part: str = "") -> list[Any]:
    """Parameters for `pytest.mark.parametrize` over corpus files: one skipped case naming the
    missing directory when the corpus is absent, instead of an empty set that hides the reason."""
    import pytest

    reason = missing(part)
    if reason is None:
        return values
    return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-corpus")]
