"""CEL string literals for any text, so that what a pod carries (an annotation's value) can be put into
a selector without changing its meaning or breaking the expression.

A double-quoted CEL string (cel-spec, syntax: string literals) takes printable ASCII as itself and any
code point as `\\uXXXX` (the Basic Multilingual Plane) or `\\UXXXXXXXX` (above it). JSON's escaping is not
CEL's: it writes a code point above the BMP as a surrogate pair, which CEL refuses (the apiserver
answered 422). A lone surrogate is no Unicode scalar value and has no CEL form; kube-apiserver's JSON
decoder reads one as U+FFFD, and so does this.
"""

from __future__ import annotations

_PRINTABLE = frozenset(range(0x20, 0x7F)) - {ord('"'), ord("\\")}
REPLACEMENT = "\ufffd"


def _escaped(code: int) -> str:
    if code in _PRINTABLE:
        return chr(code)
    if 0xD800 <= code <= 0xDFFF:
        code = ord(REPLACEMENT)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def cel_string(text: str) -> str:
    """`text` as a CEL string literal (double-quoted) that evaluates to `text` itself."""
    return '"' + "".join(_escaped(ord(char)) for char in text) + '"'


def cel_list(texts: list[str]) -> str:
    """A CEL list literal of strings."""
    return "[" + ", ".join(cel_string(text) for text in texts) + "]"
