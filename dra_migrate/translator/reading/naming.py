"""One name for every file a run touches, whatever form its path was typed in.

Inputs keep the form the user typed (`examples/`, `./x`, `../x`, `/abs/through/a/link`): messages and
diffs show it. Files the run finds through the file system instead (a kustomization above an input,
its templates file) are resolved paths. `InputNames` names such a file again as the user would reach
it, under the directory argument it was found through, so both kinds compare, display and place
under `--output-dir` the same way for every path form.
"""

from __future__ import annotations

from pathlib import Path

from dra_migrate.translator.reading.sources import Source, output_relative


class InputNames:
    """The run's directory arguments, each resolved once; `base` is where output paths start
    (sources.common_base of the arguments)."""

    def __init__(self, base: Path | None = None) -> None:
        self._resolved: dict[Path, Path] = {}
        self.base = base

    def resolved(self, directory: Path) -> Path:
        if directory not in self._resolved:
            self._resolved[directory] = directory.resolve()
        return self._resolved[directory]

    def source(self, found: Path, root: Path | None) -> Source:
        """`found` (a resolved path) as a source under the directory argument `root`: the user's form
        of the path and its place in an output tree. A file outside every argument keeps its resolved
        path and is placed by its name, as a file named on the command line is."""
        if root is not None:
            try:
                relative = found.relative_to(self.resolved(root))
            except ValueError:
                pass
            else:
                path = root / relative
                return Source(path, output_relative(path, self.base) if self.base else relative, root)
        base = self.resolved(self.base) if self.base else None
        relative = found.relative_to(base) if base is not None and found.is_relative_to(base) else Path(found.name)
        return Source(found, relative, None)
