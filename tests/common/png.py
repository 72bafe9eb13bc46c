"""Pixels of a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's screenshots are), for tests that
check what a browser drew without an imaging library."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at bit depth 8


def _paeth(left: int, up: int, corner: int) -> int:
    estimate = left + up - corner
    distances = (abs(estimate - left), abs(estimate - up), abs(estimate - corner))
    return (left, up, corner)[distances.index(min(distances))]


def colour_counts(path: Path) -> Counter[tuple[int, int, int]]:
    """How many pixels of each RGB colour the image has (alpha ignored)."""
    data = path.read_bytes()
    assert data.startswith(_SIGNATURE), f"{path}: not a PNG"
    offset, idat = len(_SIGNATURE), b""
    width = height = bpp = 0
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in _CHANNELS and not interlace, f"{path}: unsupported PNG"
            bpp = _CHANNELS[colour]
        elif kind == b"IDAT":
            idat += body
    raw, stride = zlib.decompress(idat), width * bpp
    previous, counts = bytearray(stride), Counter[tuple[int, int, int]]()
    for row in range(height):
        start = row * (stride + 1)
        row_filter, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            corner = previous[i - bpp] if i >= bpp else 0
            predictor = (0, left, previous[i], (left + previous[i]) // 2, _paeth(left, previous[i], corner))[row_filter]
            line[i] = (line[i] + predictor) & 0xFF
        counts.update(zip(line[0::bpp], line[1::bpp], line[2::bpp], strict=True))
        previous = line
    return counts
