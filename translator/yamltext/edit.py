"""Rewrite one YAML document so it parses to a new value, changing only the text that must change.

    result = edit_document(doc.text, doc.obj, converted)   # EditResult(text, method, reason)
    text = apply_changes(doc.text, doc.obj, converted)     # just the text

Every result is re-parsed and compared with `new`; a surgical result that fails that check
goes to the ruamel round trip, and one that fails too becomes a plain dump of `new`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import yaml
from yaml.nodes import Node

from translator.yamltext.diff import Op, diff, same
from translator.yamltext.layout import detect_layout
from translator.yamltext.render import DeclineError, Layout
from translator.yamltext.roundtrip import frame, roundtrip_edit
from translator.yamltext.surgical import SurgicalEditor

Method = Literal["surgical", "roundtrip", "rewrite"]


@dataclass(frozen=True, slots=True)
class EditResult:
    text: str
    method: Method
    reason: str = ""  # why the surgical path was not used; empty when it was


def apply_changes(doc_text: str, old: Any, new: Any) -> str:
    return edit_document(doc_text, old, new).text


def edit_document(doc_text: str, old: Any, new: Any) -> EditResult:
    if same(old, new):
        return EditResult(doc_text, "surgical")
    ops = diff(old, new)
    layout = Layout()
    try:
        root = _compose(doc_text)
        layout = detect_layout([root])
        text = SurgicalEditor(doc_text, root, new).apply(ops)
        if parses_to(text, new):
            return EditResult(text, "surgical")
        reason = "surgical edit did not re-parse to the new value"
    except DeclineError as exc:
        reason = str(exc)
    return _fallback(doc_text, ops, new, layout, reason)


def _compose(text: str) -> Node:
    root = yaml.compose(text, Loader=yaml.CSafeLoader)
    if root is None:
        raise DeclineError("empty document")
    return root


def _fallback(doc_text: str, ops: list[Op], new: Any, layout: Layout, reason: str) -> EditResult:
    try:
        text = roundtrip_edit(doc_text, ops, layout)
        if parses_to(text, new):
            return EditResult(text, "roundtrip", reason)
        reason += "; round trip did not re-parse to the new value"
    except Exception as exc:  # ruamel raises many unrelated types; any of them means "rewrite"
        reason += f"; round trip failed: {exc}"
    return EditResult(rewrite(doc_text, new), "rewrite", reason)


def rewrite(doc_text: str, new: Any) -> str:
    """A plain dump of `new` that keeps the document's framing (`---`, `...`) so streams still join."""
    head, body, foot = frame(doc_text)
    text = yaml.dump(
        new,
        Dumper=yaml.CSafeDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )
    if not body.endswith("\n") and not foot:
        text = text.removesuffix("\n")
    if "\r\n" in doc_text:
        text = text.replace("\n", "\r\n")
    return head + text + foot


def parses_to(text: str, new: Any) -> bool:
    try:
        loaded = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return False
    return same(loaded, new)
