"""Rewrite one YAML document so it parses to a new value, changing only the text that must change.

    result = edit_document(doc.text, doc.obj, converted)   # EditResult(text, method, reason)

Every result is re-parsed and compared with `new`; a surgical result that fails that check
goes to the ruamel round trip, and one that fails too becomes a plain dump of `new`.
"""

from __future__ import annotations

from typing import Any, Literal

import yaml
from yaml.nodes import Node

from dra_migrate.engine import AddKeys, AppendItems, Change, Replace, changes, get_path, same
from dra_migrate.manifests.yamltext import kubeyaml
from dra_migrate.manifests.yamltext.comments import lost_comments
from dra_migrate.manifests.yamltext.layout import detect_layout
from dra_migrate.manifests.yamltext.shapes import DeclineError, Layout
from dra_migrate.manifests.yamltext.surgical import SurgicalEditor

Method = Literal["surgical", "roundtrip", "rewrite"]


class EditResult:
    __slots__ = ("lost_comments", "method", "reason", "text")

    def __init__(
        self,
        text: str,
        method: Method,
        reason: str = "",
        lost_comments: tuple[tuple[int, str], ...] = (),
    ) -> None:
        self.text = text
        self.method = method
        self.reason = reason  # why the surgical path was not used; empty when it was
        # (line, text) of comments a fallback could not keep; the surgical path keeps every one it can
        self.lost_comments = lost_comments


def edit_document(doc_text: str, old: Any, new: Any, known: list[Change] | None = None) -> EditResult:
    """`doc_text` (which parses to `old`) edited to parse to `new`; `known` is the change set from
    `old` to `new` when the caller has it (a conversion's), else it is found here."""
    ops = changes(old, new) if known is None else known
    if not ops:
        return EditResult(doc_text, "surgical")
    root: Node | None = None
    try:
        root = _compose(doc_text)
        text = SurgicalEditor(doc_text, root, new).apply(ops)
        if parses_to(text, new, ops):
            return EditResult(text, "surgical")
        reason = "surgical edit did not re-parse to the new value"
    except DeclineError as exc:
        reason = str(exc)
    except Exception as exc:  # a bug or an unforeseen shape must not cost the document
        reason = f"surgical editor failed: {type(exc).__name__}: {exc}"
    layout = detect_layout([root]) if root is not None else Layout()
    return _fallback(doc_text, ops, new, layout, reason)


def _compose(text: str) -> Node:
    root = yaml.compose(text, Loader=kubeyaml.KubeLoader)
    if root is None:
        raise DeclineError("empty document")
    return root


def _fallback(doc_text: str, ops: list[Change], new: Any, layout: Layout, reason: str) -> EditResult:
    from dra_migrate.manifests.yamltext.roundtrip import roundtrip_edit  # ruamel.yaml: only when needed

    try:
        text = roundtrip_edit(doc_text, ops, layout)
        if parses_to(text, new):
            return EditResult(text, "roundtrip", reason, lost_comments(doc_text, text))
        reason += "; round trip did not re-parse to the new value"
    except Exception as exc:  # ruamel raises many unrelated types; any of them means "rewrite"
        reason += f"; round trip failed: {exc}"
    text = rewrite(doc_text, new)
    return EditResult(text, "rewrite", reason, lost_comments(doc_text, text))


def rewrite(doc_text: str, new: Any) -> str:
    """A plain dump of `new` that keeps the document's framing (`---`, `...`) so streams still join."""
    from dra_migrate.manifests.yamltext.roundtrip import frame

    head, body, foot = frame(doc_text)
    text = kubeyaml.dump(new)
    if not body.endswith("\n") and not foot:
        text = text.removesuffix("\n")
    if "\r\n" in doc_text:
        text = text.replace("\n", "\r\n")
    return head + text + foot


def parses_to(text: str, new: Any, ops: list[Change] | None = None) -> bool:
    """Whether `text` loads to `new`, telling 1 from True and 1.0 (which == does not).

    With the ops that produced `text`, the strict comparison is limited to what they wrote:
    the rest of the text is the old document's, which already loaded to exactly those values.
    """
    try:
        loaded = kubeyaml.load(text)
    except yaml.YAMLError:
        return False
    if ops is None or loaded != new:  # != also fails on NaN, which `same` accepts
        return same(loaded, new)
    try:
        return all(_written_same(loaded, op) for op in ops)
    except (KeyError, IndexError, TypeError):
        return False


def _written_same(loaded: Any, op: Change) -> bool:
    if isinstance(op, Replace):
        return same(get_path(loaded, op.path), op.value)
    if isinstance(op, AddKeys):
        target = get_path(loaded, op.path)
        return all(same(target[k], v) for k, v in op.items)
    if isinstance(op, AppendItems):
        target = get_path(loaded, op.path)
        return same(target[len(target) - len(op.items) :], list(op.items))
    return True  # removals write nothing
