"""The repository as the unit of a run: every kustomization in it, and for every file the roots that
render from it, whatever files or directories the arguments named.

The pre-commit hooks pass the staged files; a user passes one file, a subdirectory or the top. Any
of them may feed kustomization roots elsewhere in the repository (an overlay patching the base that
was named), so render verification (translator.renders.verify) builds every root that renders from a changed
file, and a refused root withholds exactly the files that render into it (translator.commands).

The repository is `--repository DIR`, else the git work tree holding the arguments, else their
common directory. Its kustomizations are found as kustomize reads them: any of the three file names,
in any directory (dot-directories too; `.git` is not a tree kustomize reads), JSON, a byte-order mark.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from dra_migrate.translator.renders.kustomize import FILE_NAMES, TEMPLATES_FILE, Kustomization, KustomizationIndex

_NOT_WALKED = frozenset({".git"})


def repository_top(arguments: Iterable[Path], named: Path | None) -> Path:
    """The resolved top of the repository the arguments (resolved directories) belong to."""
    directories = list(arguments)
    if named is not None:
        top = named.resolve()
    else:
        start = Path(os.path.commonpath(directories)) if directories else Path.cwd().resolve()
        top = _git_top(start) or start
    # an argument outside the named repository still belongs to the run
    return Path(os.path.commonpath([top, *directories]))


def _git_top(start: Path) -> Path | None:
    """The git work tree holding `start` (`.git` is a directory, or a file in a worktree or submodule)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


class RepositoryGraph:
    """Every kustomization under the top and what each root renders from, read once (through the
    run's KustomizationIndex, whose cache the rest of the run shares)."""

    def __init__(self, index: KustomizationIndex, top: Path) -> None:
        self.index = index
        self.top = top
        self.kustomizations = [k for k in (index.read(d) for d in _kustomization_directories(top)) if k is not None]
        self._closures: dict[Path, frozenset[Path]] = {}

    def roots(self) -> list[Kustomization]:
        """Kustomizations that build on their own (a Component does not)."""
        return [k for k in self.kustomizations if k.data.get("kind") != "Component"]

    def renders_from(self, root: Kustomization) -> frozenset[Path]:
        """Every file (resolved) the root's render depends on that the run may write: the kustomization
        files of the chain, their templates files, and every file they list."""
        cached = self._closures.get(root.path)
        if cached is not None:
            return cached
        files: set[Path] = set()
        seen: set[Path] = set()
        pending = [root]
        while pending:
            kustomization = pending.pop()
            if kustomization.directory in seen:
                continue
            seen.add(kustomization.directory)
            files |= {kustomization.path, kustomization.directory / TEMPLATES_FILE, *kustomization.files}
            pending.extend(k for k in (self.index.read(d) for d in kustomization.directories) if k is not None)
        closure = frozenset(files)
        self._closures[root.path] = closure
        return closure

    def roots_rendering(self, files: Iterable[Path]) -> list[Kustomization]:
        """The roots whose render depends on any of `files` (resolved)."""
        wanted = set(files)
        if not wanted:
            return []
        return [root for root in self.roots() if not wanted.isdisjoint(self.renders_from(root))]

    def directories_of(self, root: Kustomization) -> list[Path]:
        """The kustomization directories a root's render reads, itself first."""
        directories = [root.directory]
        for path in sorted(self.renders_from(root)):
            if path.name in FILE_NAMES and path.parent != root.directory:
                directories.append(path.parent)
        return directories


def _kustomization_directories(top: Path) -> Iterator[Path]:
    """Directories under `top` holding a kustomization file, links followed once each (as kustomize
    follows them), sorted."""
    walked = {top.resolve()}
    for directory, subdirectories, files in os.walk(top, followlinks=True):
        kept = []
        for name in sorted(subdirectories):
            if name in _NOT_WALKED:
                continue
            real = Path(directory, name).resolve()
            if real not in walked:
                walked.add(real)
                kept.append(name)
        subdirectories[:] = kept
        if any(name in files for name in FILE_NAMES):
            yield Path(directory)
