"""Reading inputs exactly: bytes decoded as UTF-8 with line endings kept, and a size bound.

Text mode would turn CRLF into LF on the way in, and every rewritten file would come out LF.
The size bound keeps one hostile or accidental file (a 2 GB log matched by a glob) from
exhausting memory; kube-apiserver itself refuses request bodies over 3 MiB.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

MAX_FILE_BYTES = 64 * 1024 * 1024


class InputTooLargeError(ValueError):
    pass


def _decode(data: bytes, limit: int) -> str:
    if len(data) > limit:
        raise InputTooLargeError(f"larger than {limit // (1024 * 1024)} MiB (--max-file-size)")
    return data.decode("utf-8")


def read_file(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    with path.open("rb") as handle:
        return _decode(handle.read(limit + 1), limit)


def read_stdin(limit: int = MAX_FILE_BYTES) -> str:
    stream: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream without bytes underneath (an embedding caller's StringIO)
        return _decode(sys.stdin.read(limit + 1).encode("utf-8"), limit)
    return _decode(stream.read(limit + 1), limit)


def newline_of(text: str) -> str:
    """The line ending a file uses, judged by its first line."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"
