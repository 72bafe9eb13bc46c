"""Where converted text goes: stdout, a mirror tree (-o DIR), or back into the file (--in-place).

Every file write is atomic (temporary file in the same directory, then rename), so an error or an
interrupt never leaves a half-written or emptied file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TextIO


def write_atomic(path: Path, text: str, durable: bool = True) -> None:
    """Temporary file + rename. `durable` also fsyncs: for rewriting sources in place, where a power
    loss must not cost the user's file; a fresh output tree can be regenerated, so it skips that cost."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class StdoutWriter:
    """Concatenates outputs; YAML streams from several files are kept apart by a document separator."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._written_any = False

    def write(self, text: str) -> None:
        if not text:
            return
        if self._written_any:
            self.stream.write("---\n" if not text.startswith("---") else "")
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self._written_any = True
