"""Re-dump a changed JSON document in the style of the original (indent, separators, final newline)."""

from __future__ import annotations

import json
import re
from typing import Any

# Compiled by re on first use: only JSON inputs need them.
_FIRST_INDENT = r"[\[{][ \t]*\r?\n([ \t]+)\S"
_ITEM_SEPARATOR = r",([ \t]*)\S"
_KEY_SEPARATOR = r'"[ \t]*:([ \t]*)\S'


def dump_json_like(original_text: str, new: Any) -> str:
    body = original_text.lstrip("\ufeff")
    nl = "\r\n" if "\r\n" in body else "\n"
    match = re.search(_FIRST_INDENT, body)
    indent: str | None = match.group(1) if match else None
    key_match = re.search(_KEY_SEPARATOR, body)
    key_sep = ":" + (key_match.group(1) if key_match else " ")
    if indent is None:
        item_match = re.search(_ITEM_SEPARATOR, body)
        item_sep = "," + (item_match.group(1) if item_match else " ")
    else:
        item_sep = ","
    text = json.dumps(
        new,
        indent=indent,
        separators=(item_sep, key_sep),
        ensure_ascii=_escapes_non_ascii(body),
    )
    if nl != "\n":
        text = text.replace("\n", nl)
    trailing = body[len(body.rstrip()) :]
    bom = original_text[: len(original_text) - len(body)]
    return bom + text + trailing


def _escapes_non_ascii(body: str) -> bool:
    """Mirror the original: raw non-ASCII text stays raw, `\\u00e9` escapes stay escaped."""
    if body.isascii():
        return "\\u" in body
    return False
