"""Where the shared test corpus lives: `../shared/corpus`, next to the checkout (never an absolute path)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
