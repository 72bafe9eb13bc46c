"""Which files a run reads: paths, directories (recursive, include/exclude globs) and stdin."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_INCLUDE = ("*.yaml", "*.yml", "*.json")
STDIN = "-"


@dataclass(frozen=True, slots=True)
class Source:
    """One input: `path` is None for stdin; `relative` places the file under an output directory."""

    path: Path | None
    relative: Path

    @property
    def display(self) -> str:
        return "<stdin>" if self.path is None else str(self.path)

    @property
    def is_json(self) -> bool:
        return self.path is not None and self.path.suffix.lower() == ".json"


def _matches(relative: Path, patterns: Sequence[str]) -> bool:
    text = relative.as_posix()
    return any(fnmatch.fnmatch(text, p) or fnmatch.fnmatch(relative.name, p) for p in patterns)


def discover(paths: Sequence[str], include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Iterator[Source]:
    """Files named directly are always read; directories contribute files matching `include`."""
    patterns = tuple(include) or DEFAULT_INCLUDE
    for raw in paths or [STDIN]:
        if raw == STDIN:
            yield Source(None, Path("stdin.yaml"))
            continue
        root = Path(raw)
        if root.is_dir():
            yield from _walk(root, patterns, exclude)
        else:
            yield Source(root, Path(root.name))


def _walk(root: Path, patterns: Sequence[str], exclude: Sequence[str]) -> Iterator[Source]:
    """Sorted, lazy, one directory listing at a time: memory does not grow with the tree."""
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        base = Path(directory)
        for name in sorted(files):
            if name.startswith("."):
                continue
            relative = (base / name).relative_to(root)
            if _matches(relative, patterns) and not _matches(relative, exclude):
                yield Source(base / name, relative)


def has_stdin(paths: Sequence[str]) -> bool:
    return not paths or STDIN in paths
