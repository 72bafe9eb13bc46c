"""Render plain values as YAML text fragments that splice into an existing document.

Structure (block/flow layout, indentation) is rendered here so the document's own sequence
style can be mirrored, which PyYAML's emitter cannot do (it always writes indentless
sequences). Scalars that are not obviously plain go through libyaml's emitter.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from dra_migrate.manifests.yamltext.kubeyaml import KubeDumper, needs_quotes
from dra_migrate.manifests.yamltext.shapes import DeclineError, Layout

# conservative: plain scalars made of these never need quotes once every reader agrees (kubeyaml)
_PLAIN_BLOCK = re.compile(r"[A-Za-z0-9_./~$(=+][^\x00-\x1f\x7f]*")
_PLAIN_FLOW = re.compile(r"[A-Za-z0-9_./~$(=+][^\x00-\x1f\x7f:,\[\]{}#]*")
_HUGE = 1 << 30


def plain_ok(s: str, flow: bool) -> bool:
    pattern = _PLAIN_FLOW if flow else _PLAIN_BLOCK
    if not pattern.fullmatch(s) or s != s.strip() or not s.isprintable():
        return False
    if ": " in s or " #" in s or s.endswith(":"):
        return False
    return not needs_quotes(s)


def _single_ok(s: str) -> bool:
    return s.isprintable()


def single_quoted(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def double_quoted(s: str) -> str:
    return _emit(s, style='"')


def _emit(value: Any, style: str | None = None) -> str:
    out = yaml.dump(value, Dumper=KubeDumper, width=_HUGE, allow_unicode=True, default_style=style)
    out = out.removesuffix("\n...\n").removesuffix("\n")
    if "\n" in out or out.startswith("!"):
        raise DeclineError(f"no single-line form for {type(value).__name__}")
    return out


def scalar(value: Any, flow: bool = False, quote: str | None = None) -> str:
    """One-line text of a scalar; `quote` is the style to keep when it can hold the value."""
    if isinstance(value, str):
        if quote == '"':
            return double_quoted(value)
        if quote == "'" and _single_ok(value):
            return single_quoted(value)
        return value if plain_ok(value, flow) else double_quoted(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if isinstance(value, dict | list | tuple):
        raise DeclineError("collection where a scalar was expected")
    return _emit(value)


def literal(value: str, indent: str, nl: str) -> str | None:
    """`|` block text for a multi-line string, or None when a literal cannot carry it exactly."""
    if not value or value[0] in " \t\n" or value.endswith("\n\n") or "\r" in value:
        return None
    if not all(c.isprintable() or c in "\t\n" for c in value):
        return None
    body = value.removesuffix("\n")
    lines = body.split("\n")
    if any(line.endswith((" ", "\t")) for line in lines):
        return None
    head = "|" if value.endswith("\n") else "|-"
    return head + "".join(nl + (indent + line if line else "") for line in lines)


def flow(value: Any, json_like: bool = False) -> str:
    if json_like:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key(k, True)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return scalar(value, flow=True)


def inline(value: Any) -> str:
    """A scalar or an empty collection in block context."""
    return flow(value) if isinstance(value, dict | list | tuple) else scalar(value)


def key(k: Any, in_flow: bool = False) -> str:
    if isinstance(k, dict | list | tuple):
        raise DeclineError("complex key")
    return scalar(k, flow=in_flow)


def _is_block(value: Any) -> bool:
    return isinstance(value, dict | list | tuple) and len(value) > 0


def block(value: Any, layout: Layout) -> list[str]:
    """Lines (without newlines) of a non-empty collection rendered at column 0."""
    if isinstance(value, dict):
        lines: list[str] = []
        for k, v in value.items():
            head = key(k) + ":"
            if not _is_block(v):
                lines.append(f"{head} {inline(v)}")
                continue
            lines.append(head)
            step = layout.map_step if isinstance(v, dict) else layout.seq_offset
            lines.extend(indent(block(v, layout), step))
        return lines
    lines = []
    pad = " " * (layout.item_offset - 1)
    for item in value:
        if not _is_block(item):
            lines.append(f"-{pad}{inline(item)}")
            continue
        sub = block(item, layout)
        lines.append(f"-{pad}{sub[0]}")
        lines.extend(indent(sub[1:], layout.item_offset))
    return lines


def indent(lines: list[str], n: int) -> list[str]:
    pad = " " * n
    return [pad + line for line in lines]


def is_block(value: Any) -> bool:
    return _is_block(value)
