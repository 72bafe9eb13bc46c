"""Corpus-driven tests parametrize over ../shared/corpus; in CI its absence must fail, not shrink the suite."""

from __future__ import annotations

import os

import pytest
from corpus import CORPUS


def test_shared_corpus_is_present_in_ci() -> None:
    if os.environ.get("CI", "").lower() not in ("true", "1"):
        pytest.skip("outside CI the corpus is optional")
    for part in ("legacy", "templated", "negative", "dra-versions"):
        assert any((CORPUS / part).iterdir()), f"{CORPUS / part} is empty or missing"
