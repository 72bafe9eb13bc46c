"""Fallback editor: ruamel.yaml round trip with the same diff applied to the comment-carrying tree.

Slow (~17x a libyaml load+dump), so it only runs for shapes the surgical editor declines.
"""

from __future__ import annotations

import copy
import io
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, ScalarString
from ruamel.yaml.tokens import CommentToken

from dra_migrate.engine import AddKeys, AppendItems, Change, RemoveItems, RemoveKey, Replace, get_path
from dra_migrate.manifests.yamltext.render import plain_ok
from dra_migrate.manifests.yamltext.shapes import Layout

_START = re.compile(r"^---(?=[ \t\r\n]|\Z)", re.M)
_END = re.compile(r"^\.\.\.(?=[ \t\r\n]|\Z)", re.M)


def roundtrip_edit(text: str, ops: list[Change], layout: Layout) -> str:
    head, body, foot = frame(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.allow_duplicate_keys = True  # PyYAML accepts them; the verification judges the result
    yaml.width = 1 << 16
    yaml.indent(
        mapping=layout.map_step,
        sequence=layout.seq_offset + layout.item_offset,
        offset=layout.seq_offset,
    )
    crlf = "\r\n" in body
    data = yaml.load(body.replace("\r\n", "\n") if crlf else body)  # ruamel keeps `\r` in comments
    if "*" in body:
        _unshare_paths(data, ops)
    for op in ops:
        data = _apply(data, op)
    out = io.StringIO()
    yaml.dump(data, out)
    result = out.getvalue()
    if not body.endswith("\n") and not foot:
        result = result.removesuffix("\n")
    if crlf:
        result = result.replace("\n", "\r\n")
    return head + result + foot


def _unshare_paths(data: Any, ops: list[Change]) -> None:
    """Give each edited place a value of its own where an alias shares it with another place
    (`resources: *r` in the Worker, the Master's `&r`), so the edit changes only that place.
    Only the containers on an edit's path are copied: shared values the conversion does not touch
    keep their anchors and aliases as written."""
    uses: dict[int, int] = {}
    _count_uses(data, uses, set())
    for op in ops:
        node = data
        for key in op.path:
            child = node[key]
            if isinstance(child, CommentedMap | CommentedSeq) and uses.get(id(child), 1) > 1:
                uses[id(child)] -= 1
                child = copy.deepcopy(child)
                child.yaml_set_anchor(None)
                _count_uses(child, uses, set())
                node[key] = child
            node = child


def _count_uses(node: Any, uses: dict[int, int], open_: set[int]) -> None:
    if not isinstance(node, CommentedMap | CommentedSeq):
        return
    uses[id(node)] = uses.get(id(node), 0) + 1
    if uses[id(node)] > 1 or id(node) in open_:
        return  # its children were counted at its first use
    open_.add(id(node))
    children = [v for _, v in node.non_merged_items()] if isinstance(node, CommentedMap) else list(node)
    for child in children:
        _count_uses(child, uses, open_)


def frame(text: str) -> tuple[str, str, str]:
    """Split off the `---` line (with directives and comments before it) and an `...` tail.

    They stay byte for byte, and a rewritten document still starts and ends a stream piece.
    """
    head_end = 1 if text.startswith("\ufeff") else 0
    head = text[:head_end]
    start = _START.search(text)
    if start is not None:
        line_end = text.find("\n", start.end())
        line_end = len(text) if line_end < 0 else line_end + 1
        rest = text[start.end() : line_end].strip()
        if not rest or rest.startswith("#"):
            head_end = line_end
            head = text[:head_end]
        else:  # content on the `---` line (`--- !tag`, `--- |`) moves to the next line
            head_end = start.end()
            head = text[:head_end] + ("\r\n" if "\r\n" in text else "\n")
            while head_end < len(text) and text[head_end] in " \t":
                head_end += 1
    end = _END.search(text, head_end)
    foot_start = len(text) if end is None else end.start()
    return head, text[head_end:foot_start], text[foot_start:]


def _rt(value: Any) -> Any:
    """Plain values as ruamel nodes; strings not plainly safe for every reader (render.plain_ok) get quotes."""
    if isinstance(value, dict):
        out = CommentedMap()
        for k, v in value.items():
            out[_rt(k)] = _rt(v)
        return out
    if isinstance(value, list | tuple):
        return CommentedSeq(_rt(v) for v in value)
    if isinstance(value, str) and not isinstance(value, ScalarString) and not plain_ok(value, flow=True):
        return DoubleQuotedScalarString(value)
    return value


def _apply(data: Any, op: Change) -> Any:
    if isinstance(op, Replace):
        if not op.path:
            return _rt(op.value)
        parent = get_path(data, op.path[:-1])
        last = op.path[-1]
        old = parent[last]
        new = op.value
        # keep the old quoting/block style of a string that only changes its text
        parent[last] = type(old)(new) if isinstance(old, ScalarString) and isinstance(new, str) else _rt(new)
        return data
    target = get_path(data, op.path)
    if isinstance(op, RemoveKey):
        _pop_key(target, op.key)
    elif isinstance(op, AddKeys):
        for k, v in op.items:
            target[_rt(k)] = _rt(v)
    elif isinstance(op, AppendItems):
        target.extend(_rt(v) for v in op.items)
    elif isinstance(op, RemoveItems):
        for index in reversed(op.indexes):
            del target[index]
    return data


def _pop_key(mapping: CommentedMap, key: Any) -> None:
    """Delete a key but keep the full-line comments ruamel had hung on its last line."""
    keys = list(mapping.keys())
    position = keys.index(key)
    trailing = _detach_trailing(mapping, key)
    del mapping[key]
    if trailing and position > 0:
        _attach_trailing(mapping, keys[position - 1], trailing)


def _last_slot(container: Any, key: Any) -> tuple[Any, Any, int]:
    """The (container, key, comment slot) that holds the comment lines after an entry."""
    value = container[key]
    while isinstance(value, CommentedMap | CommentedSeq) and len(value) and not value.fa.flow_style():
        container = value
        key = list(value.keys())[-1] if isinstance(value, CommentedMap) else len(value) - 1
        value = container[key]
    return container, key, 2 if isinstance(container, CommentedMap) else 0


def _detach_trailing(container: Any, key: Any) -> str:
    holder, slot_key, slot = _last_slot(container, key)
    entry = holder.ca.items.get(slot_key)
    token = entry[slot] if entry and len(entry) > slot else None
    if not isinstance(token, CommentToken) or "\n" not in token.value:
        return ""
    # the first line is the removed entry's own end-of-line comment
    return str(token.value.split("\n", 1)[1])


def _attach_trailing(container: Any, key: Any, lines: str) -> None:
    holder, slot_key, slot = _last_slot(container, key)
    entry = holder.ca.items.setdefault(slot_key, [None, None, None, None])
    token = entry[slot]
    if isinstance(token, CommentToken):
        token.value = token.value + lines
    else:
        entry[slot] = CommentToken("\n" + lines, CommentMark(0), None)
