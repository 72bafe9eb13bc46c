"""Reading inputs exactly: bytes decoded as UTF-8 with line endings kept, and a size bound.

Text mode would turn CRLF into LF on the way in, and every rewritten file would come out LF.
The size bound keeps one hostile or accidental file (a 2 GB log matched by a glob) from
exhausting memory; kube-apiserver itself refuses request bodies over 3 MiB.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

MAX_FILE_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20


class InputTooLargeError(ValueError):
    pass


def _decode(data: bytes, limit: int, too_large: bool = False) -> str:
    if too_large or len(data) > limit:
        raise InputTooLargeError(f"larger than {limit // (1024 * 1024)} MiB (--max-file-size)")
    return data.decode("utf-8")


def _read_bounded(stream: BinaryIO, limit: int) -> bytes:
    """Up to limit + 1 bytes, in chunks: read(limit + 1) would allocate the whole bound at once."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class NotRegularFileError(OSError):
    """A FIFO, socket or device met while walking a directory: reading it could block forever."""


def read_file(path: Path, limit: int = MAX_FILE_BYTES, regular_only: bool = False) -> str:
    """The file's text; with `regular_only`, a FIFO or device is refused without waiting for a writer."""
    # O_NONBLOCK opens a FIFO without waiting for a writer; it changes nothing for a regular file
    flags = os.O_RDONLY | os.O_CLOEXEC | (os.O_NONBLOCK if regular_only else 0)
    with os.fdopen(os.open(path, flags), "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) and regular_only:
            raise NotRegularFileError(errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(path))
        if not stat.S_ISREG(status.st_mode):  # a pipe or device (`<(...)`): no size to trust
            return _decode(_read_bounded(handle, limit), limit)
        if status.st_size > limit:
            return _decode(b"", limit, too_large=True)
        return _decode(handle.read(), limit)  # read() sizes its buffer from the file


def read_stdin(limit: int = MAX_FILE_BYTES) -> str:
    stream: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream without bytes underneath (an embedding caller's StringIO)
        return _decode(sys.stdin.read(limit + 1).encode("utf-8"), limit)
    return _decode(_read_bounded(stream, limit), limit)


def newline_of(text: str) -> str:
    """The line ending a file uses, judged by its first line."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"
