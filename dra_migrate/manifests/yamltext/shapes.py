"""What the yamltext modules share: the document's indentation habits and the fall-back signal."""

from __future__ import annotations

from typing import NamedTuple


class DeclineError(Exception):
    """The surgical path does not handle this shape; the caller falls back."""


class Layout(NamedTuple):
    map_step: int = 2  # nested mapping keys, relative to the parent key
    seq_offset: int = 0  # `- ` relative to the parent key; 0 is `key:\n- item`
    item_offset: int = 2  # item content relative to its `-`
