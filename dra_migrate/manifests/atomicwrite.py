"""Atomic file writes: a temporary file in the same directory, then a rename, so an error or an
interrupt never leaves a half-written or emptied file behind; SIGTERM and SIGINT remove the
temporary file before the process exits.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import FrameType

_pending: set[Path] = set()  # temporary files not yet renamed into place


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    for temporary in list(_pending):
        temporary.unlink(missing_ok=True)
    raise SystemExit(128 + signum)  # the shell's code for the signal; unwinds through write_atomic's cleanup too


def install_signal_cleanup() -> None:
    """SIGTERM ends the run like Ctrl-C does: through Python, so no temporary file stays behind."""
    import signal  # only runs that write files need it (its import builds enums: milliseconds)

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def write_atomic(path: Path, text: str, durable: bool = True, mode: int | None = None) -> None:
    """Temporary file + rename. `durable` also fsyncs: for rewriting sources in place, where a power
    loss must not cost the user's file; a fresh output tree can be regenerated, so it skips that cost.
    `mode`: the permissions (an output tree's copy takes its source's); else the file's own, or 0644."""
    write_bytes_atomic(path, text.encode("utf-8"), durable, mode)


def write_bytes_atomic(path: Path, data: bytes, durable: bool = False, mode: int | None = None) -> None:
    """write_atomic for bytes: a file copied as it is (an output tree's unconverted files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    temporary = _temporary_beside(path)
    try:
        fd = _create_exclusive(temporary)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        temporary.chmod(mode)
        temporary.replace(path)
    except FileExistsError:  # another process took the name between the check and the open: its file
        raise
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    finally:
        _pending.discard(temporary)


def _temporary_beside(path: Path) -> Path:
    """A fresh temporary name next to `path`, registered for the signal cleanup before the file
    exists: a signal arriving at any point after creation finds it (mkstemp left a window between
    creating the file and returning its name)."""
    while True:
        temporary = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
        if not temporary.exists():
            _pending.add(temporary)
            return temporary


def _create_exclusive(temporary: Path) -> int:
    return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
