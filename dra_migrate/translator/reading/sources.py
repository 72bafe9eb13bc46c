"""Which files a run reads: paths, directories (recursive, gitignore-style include/exclude) and stdin.

Patterns follow .gitignore: a name without a slash (`legacy`, `*.json`) matches at any depth and a
directory of that name is skipped whole; a pattern with a slash (`overlays/prod`) is anchored at
the directory argument, and may also be written with that argument in front, as typed from the
shell (`manifests/overlays/prod` for `manifests/`). Matching ignores letter case, so `*.yaml`
also reads `APP.YAML`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pathspec

DEFAULT_INCLUDE = ("*.yaml", "*.yml", "*.json")
STDIN = "-"


def display_path(path: Path) -> str:
    """The path as a user reads it: relative to the working directory when it lies below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith("..") else relative


class Source(NamedTuple):
    """One input: `path` is None for stdin; `relative` places the file under an output directory (its
    path below the common directory of all the arguments, so the output tree mirrors the inputs);
    `root` is the directory argument the file was found under (None for files named directly)."""

    path: Path | None
    relative: Path
    root: Path | None = None

    @property
    def display(self) -> str:
        return "<stdin>" if self.path is None else display_path(self.path)

    @property
    def is_json(self) -> bool:
        return self.path is not None and self.path.suffix.lower() == ".json"


class Patterns:
    """Include and exclude patterns for one directory argument."""

    def __init__(self, root: Path, include: Sequence[str], exclude: Sequence[str]) -> None:
        self.include = self._spec(root, include or DEFAULT_INCLUDE)
        self.exclude = self._spec(root, exclude) if exclude else None

    @staticmethod
    def _spec(root: Path, patterns: Sequence[str]) -> pathspec.GitIgnoreSpec:
        import pathspec  # only directory arguments need it: a run over named files starts without it

        prefixes = {f"{root.as_posix().rstrip('/')}/", f"{os.path.normpath(root)}/".replace(os.sep, "/")}
        lines = []
        for pattern in patterns:
            for prefix in prefixes:
                if prefix not in ("./", "/") and pattern.startswith(prefix):
                    pattern = "/" + pattern[len(prefix) :]  # written from the shell's directory
                    break
            lines.append(pattern.lower())
        return pathspec.GitIgnoreSpec.from_lines(lines)

    def skips_directory(self, relative: str) -> bool:
        return self.exclude is not None and self.exclude.match_file(relative.lower() + "/")

    def excludes(self, relative: str) -> bool:
        return self.exclude is not None and self.exclude.match_file(relative.lower())

    def reads_file(self, relative: str) -> bool:
        lowered = relative.lower()
        return self.include.match_file(lowered) and not (self.exclude and self.exclude.match_file(lowered))


def common_base(paths: Sequence[str]) -> Path:
    """The deepest directory holding every argument (a directory itself, a file's directory), as an
    absolute path without resolving links: output paths are made relative to it."""
    directories = [_absolute(Path(raw) if Path(raw).is_dir() else Path(raw).parent) for raw in paths if raw != STDIN]
    return Path(os.path.commonpath(directories)) if directories else Path.cwd()


def output_relative(path: Path, base: Path) -> Path:
    return Path(os.path.relpath(_absolute(path), base))


def _absolute(path: Path) -> Path:
    """Absolute, `..` folded, links not followed: the path as typed, from the root."""
    return Path(os.path.normpath(path.absolute()))


def discover(paths: Sequence[str], include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Iterator[Source]:
    """Files named directly are always read; directories contribute files the patterns select."""
    base = common_base(paths)
    for raw in paths or [STDIN]:
        if raw == STDIN:
            yield Source(None, Path("stdin.yaml"))
            continue
        root = Path(raw)
        if root.is_dir():
            prefix = output_relative(root, base)
            for path, relative in _walk(root, Patterns(root, include, exclude), selected=True):
                yield Source(path, prefix / relative, root)
        else:
            yield Source(root, output_relative(root, base))


def unselected(paths: Sequence[str], include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Iterator[Source]:
    """The other files of the directory arguments, which an output tree copies as they are, so that it
    holds every file and still builds: what kustomize reads besides manifests (generator sources, `.env`
    files, an extensionless `Kustomization`), excluded paths, dot-files and dot-directories (not `.git`)."""
    base = common_base(paths)
    for raw in paths:
        root = Path(raw)
        if raw != STDIN and root.is_dir():
            prefix = output_relative(root, base)
            for path, relative in _walk(root, Patterns(root, include, exclude), selected=False):
                yield Source(path, prefix / relative, root)


def _walk(root: Path, patterns: Patterns, selected: bool) -> Iterator[tuple[Path, Path]]:
    """(path, path below root) of the files the patterns select (or, with selected=False, of the
    others: excluded and dot ones included). Sorted, lazy, one directory listing at a time: memory does
    not grow with the tree."""
    real_root = root.resolve()
    walked = {real_root}
    # Symbolic links to directories are followed, as kustomize follows them; each real directory once. A
    # link to a directory the walk reaches anyway is not followed: its files are named by the path git
    # tracks them under (a diff through the link is one `git apply` refuses).
    for directory, subdirectories, files in os.walk(root, followlinks=True):
        base = Path(directory)
        relative_base = base.relative_to(root)
        subdirectories[:] = [
            d
            for d in sorted(subdirectories)
            if (
                (not selected and d != ".git")
                or (not d.startswith(".") and not patterns.skips_directory((relative_base / d).as_posix()))
            )
            and not _reached_anyway(base / d, real_root, patterns, selected)
            and _first_visit(base / d, walked)
        ]
        selecting = not relative_base.parts or _selected_directory(relative_base, patterns)
        for name in sorted(files):
            relative = relative_base / name
            reads = selecting and not name.startswith(".") and patterns.reads_file(relative.as_posix())
            if reads == selected:
                yield base / name, relative


def _reached_anyway(directory: Path, real_root: Path, patterns: Patterns, selected: bool) -> bool:
    """Whether `directory` is a link to a directory the walk visits under its own name."""
    if not directory.is_symlink():
        return False
    real = directory.resolve()
    if real == real_root or not real.is_relative_to(real_root):
        return False
    relative = real.relative_to(real_root)
    return ".git" not in relative.parts and (not selected or _selected_directory(relative, patterns))


def _selected_directory(relative: Path, patterns: Patterns) -> bool:
    """Whether the run reads files in this directory (none of it is a dot-directory or excluded)."""
    parts = relative.parts
    return not any(
        part.startswith(".") or patterns.skips_directory(Path(*parts[: i + 1]).as_posix())
        for i, part in enumerate(parts)
    )


def _first_visit(directory: Path, walked: set[Path]) -> bool:
    real = directory.resolve()
    if real in walked:
        return False
    walked.add(real)
    return True


def has_stdin(paths: Sequence[str]) -> bool:
    return not paths or STDIN in paths
