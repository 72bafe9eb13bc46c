"""Turn diff ops into text edits on the composed document, touching only the changed nodes."""

from __future__ import annotations

import re
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from dra_migrate.engine import (
    AddKeys,
    AppendItems,
    Change,
    ChangePath,
    RemoveItems,
    RemoveKey,
    Replace,
    get_path,
)
from dra_migrate.manifests.yamltext import render
from dra_migrate.manifests.yamltext.layout import Text, detect_layout
from dra_migrate.manifests.yamltext.shapes import DeclineError, Layout

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_DASH_PREFIX = re.compile(r"[ ]*(?:-[ ]+)+")  # `- ` (or `- - `) before a first key
_ITEM_PREFIX = re.compile(r"[ ]*-[ ]+")


class _Edit:
    __slots__ = ("depth", "end", "start", "text")

    def __init__(self, start: int, end: int, text: str, depth: int) -> None:
        self.start = start
        self.end = end
        self.text = text
        self.depth = depth  # at one position, deeper insertions go first (they end the inner block)


Chain = list[tuple[Node, Node | None]]  # (node, its key node) from the root down


class SurgicalEditor:
    def __init__(self, text: str, root: Node, new: Any) -> None:
        self.t = Text(text)
        self.root = root
        self.new = new
        self.edits: list[_Edit] = []
        self._entries: dict[int, dict[Any, tuple[Node, Node]]] = {}
        self._chains: dict[ChangePath, Chain] = {}

    def apply(self, ops: list[Change]) -> str:
        removals: dict[ChangePath, list[Any]] = {}
        for op in self._normalise(ops):
            if isinstance(op, RemoveKey):
                removals.setdefault(op.path, []).append(op.key)
            else:
                self._apply(op)
        for path, keys in removals.items():
            self._remove_keys(path, keys)
        return self._splice()

    # -- locating nodes -------------------------------------------------------------------

    def _chain(self, path: ChangePath) -> Chain:
        chain = self._chains.get(path)
        if chain is None:
            if path:
                parent = self._chain(path[:-1])
                chain = [*parent, self._child(parent[-1][0], path[-1])]
            else:
                chain = [(self.root, None)]
            self._chains[path] = chain
        return chain

    def _child(self, node: Node, part: Any) -> tuple[Node, Node | None]:
        t = self.t
        if isinstance(node, MappingNode):
            found = self._mapping(node).get(part)
            if found is None:
                raise DeclineError(f"key {part!r} not in the text")
            key, value = found
            if t.start(value) < t.mark_end(key):
                raise DeclineError("alias")  # an alias reuses the anchored node, which sits earlier
            return value, key
        if isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            value = node.value[part]
            before = t.start(node.value[part - 1]) if part else t.start(node) - 1
            if t.start(value) <= before:
                raise DeclineError("alias")
            return value, None
        raise DeclineError("path does not match the text")

    def _mapping(self, node: MappingNode) -> dict[Any, tuple[Node, Node]]:
        entries = self._entries.get(id(node))
        if entries is None:
            entries = {}
            for key, value in node.value:
                constructed = _key_value(key)
                if constructed in entries:
                    raise DeclineError("duplicate key")
                entries[constructed] = (key, value)
            self._entries[id(node)] = entries
        return entries

    def _normalise(self, ops: list[Change]) -> list[Change]:
        """Edits inside flow collections become a re-render of the outermost flow node."""
        out: list[Change] = []
        replaced: list[ChangePath] = []
        for op in ops:
            chain = self._chain(op.path)
            nodes = chain[:-1] if isinstance(op, Replace) else chain
            for depth, (node, _) in enumerate(nodes):
                if isinstance(node, MappingNode | SequenceNode) and node.flow_style:
                    path = op.path[:depth]
                    op = Replace(path, get_path(self.new, path))
                    break
            out.append(op)
            if isinstance(op, Replace):
                replaced.append(op.path)
        kept: list[Change] = []
        seen: set[ChangePath] = set()
        for op in out:
            covered = any(op.path[: len(p)] == p and (op.path != p or not isinstance(op, Replace)) for p in replaced)
            if covered or (isinstance(op, Replace) and op.path in seen):
                continue
            if isinstance(op, Replace):
                seen.add(op.path)
            kept.append(op)
        return kept

    # -- ops to edits ---------------------------------------------------------------------

    def _apply(self, op: Change) -> None:
        chain = self._chain(op.path)
        node = chain[-1][0]
        start = self.t.start(node)
        if self.t.s[start : start + 1] in ("&", "!"):
            raise DeclineError("anchor or tag on an edited node")
        if isinstance(op, Replace):
            self._replace(op, chain)
        elif isinstance(op, AddKeys):
            self._add_keys(op, chain)
        elif isinstance(op, AppendItems):
            self._append(op, chain)
        elif isinstance(op, RemoveItems):
            self._remove_items(op, chain)

    def _add_keys(self, op: AddKeys, chain: Chain) -> None:
        node = chain[-1][0]
        if not isinstance(node, MappingNode):
            raise DeclineError("keys added to a non-mapping")
        column = node.start_mark.column
        lines = render.block(dict(op.items), detect_layout([n for n, _ in chain]))
        # comments level with the keys still belong to this mapping (not at the top level, where
        # they tend to introduce the next document)
        self._insert_after(node, max(column, 1), render.indent(lines, column), len(op.path))

    def _append(self, op: AppendItems, chain: Chain) -> None:
        node = chain[-1][0]
        if not isinstance(node, SequenceNode):
            raise DeclineError("items appended to a non-sequence")
        column = node.start_mark.column
        layout = _with_items(detect_layout([n for n, _ in chain]), node)
        lines = render.block(list(op.items), layout)
        # a comment level with the dashes may head the next key of an indentless parent
        self._insert_after(node, column + 1, render.indent(lines, column), len(op.path))

    def _insert_after(self, node: Node, min_indent: int, lines: list[str], depth: int) -> None:
        t = self.t
        pos = t.skip_inner_comments(t.line_end(t.end(node)), min_indent)
        nl = t.nl
        text = "".join(line + nl for line in lines)
        if pos == len(t.s) and not t.s.endswith("\n"):
            text = nl + text[: -len(nl)]  # keep the missing final newline missing
        self.edits.append(_Edit(pos, pos, text, depth))

    def _remove_items(self, op: RemoveItems, chain: Chain) -> None:
        t = self.t
        node = chain[-1][0]
        if not isinstance(node, SequenceNode):
            raise DeclineError("items removed from a non-sequence")
        for index in op.indexes:
            item = node.value[index]
            start = t.start(item)
            line = t.line_start(start)
            if not _ITEM_PREFIX.fullmatch(t.s, line, start):
                raise DeclineError("sequence item not alone on its `- ` line")
            self._delete_lines(line, t.line_end(t.end(item)))

    def _remove_keys(self, path: ChangePath, keys: list[Any]) -> None:
        t = self.t
        chain = self._chain(path)
        node = chain[-1][0]
        if not isinstance(node, MappingNode) or t.s[t.start(node)] in ("&", "!"):
            raise DeclineError("keys removed from an odd mapping")
        mapping = self._mapping(node)
        if any(k not in mapping for k in keys):
            raise DeclineError("removed key not in the text")
        removed = {id(mapping[k][0]) for k in keys}
        entries = node.value
        for i, (key, value) in enumerate(entries):
            if id(key) not in removed:
                continue
            start = t.start(key)
            line = t.line_start(start)
            t.after_colon(key)  # rejects multi-line and explicit `?` keys
            if not t.s[line:start].strip(" \ufeff"):
                self._delete_lines(line, t.line_end(t.end(value)))
            elif _DASH_PREFIX.fullmatch(t.s, line, start):
                self._remove_first_key(entries, i, removed)
            else:
                raise DeclineError("key shares its line with other content")

    def _remove_first_key(self, entries: list[tuple[Node, Node]], i: int, removed: set[int]) -> None:
        """`- name: x\\n  image: y` loses `name`: the next surviving key moves up behind the dash."""
        t = self.t
        j = i + 1
        while j < len(entries) and id(entries[j][0]) in removed:
            j += 1  # those go too, line by line
        if j == len(entries):
            raise DeclineError("every key after a `- ` removed")
        follow = t.start(entries[j][0])
        between = t.s[t.line_end(t.end(entries[i][1])) : follow]
        if any(line.lstrip().startswith("#") for line in between.splitlines()):
            raise DeclineError("comment lines behind a removed `- ` key")
        self.edits.append(_Edit(t.start(entries[i][0]), follow, "", 0))

    def _delete_lines(self, start: int, end: int) -> None:
        self.edits.append(_Edit(max(start, self.t.base), end, "", 0))  # never delete a BOM

    def _replace(self, op: Replace, chain: Chain) -> None:
        t = self.t
        node, key = chain[-1]
        value = op.value
        start, end = t.start(node), t.end(node)
        depth = len(op.path)
        flow_node = isinstance(node, MappingNode | SequenceNode) and node.flow_style
        if isinstance(node, ScalarNode) and not render.is_block(value):
            text = self._scalar_text(node, value, start)
            if start == end:  # an empty (null) value: `key:` gets ` value`
                if key is None:
                    raise DeclineError("empty sequence item")
                text = " " + text
            self.edits.append(_Edit(start, end, text, depth))
            return
        if flow_node:
            json_like = t.s[start + 1 : end].lstrip()[:1] == '"'
            text = render.flow(value, json_like) if render.is_block(value) else render.inline(value)
            self.edits.append(_Edit(start, end, text, depth))
            return
        layout = detect_layout([n for n, _ in chain])
        if key is not None:
            self._replace_mapping_value(node, key, value, layout, depth)
            return
        if start == end:
            raise DeclineError("empty sequence item")
        if not render.is_block(value):
            self.edits.append(_Edit(start, end, render.inline(value), depth))
            return
        lines = render.block(value, _with_items(layout, node))
        column = node.start_mark.column
        text = lines[0] + "".join(t.nl + " " * column + line for line in lines[1:])
        self.edits.append(_Edit(start, end, text, depth))

    def _replace_mapping_value(self, node: Node, key: Node, value: Any, layout: Layout, depth: int) -> None:
        t = self.t
        colon = t.after_colon(key)
        start, end = t.start(node), t.end(node)
        base = key.start_mark.column
        # a comment after the key (or full-line ones before the value) stays: replace whole lines
        commented = "#" in t.s[colon:start]
        if not render.is_block(value):
            if commented:
                text = " " * (base + layout.map_step) + render.inline(value)
                self.edits.append(_Edit(t.line_start(start), end, text, depth))
            else:
                self.edits.append(_Edit(colon, end, " " + render.inline(value), depth))
            return
        if isinstance(value, dict):
            column = node.start_mark.column if _block_of(node, MappingNode) else base + layout.map_step
        else:
            column = node.start_mark.column if _block_of(node, SequenceNode) else base + layout.seq_offset
            layout = _with_items(layout, node)
        lines = render.indent(render.block(value, layout), column)
        if commented:
            self.edits.append(_Edit(t.line_start(start), end, t.nl.join(lines), depth))
        else:
            self.edits.append(_Edit(colon, end, "".join(t.nl + line for line in lines), depth))

    def _scalar_text(self, node: ScalarNode, value: Any, start: int) -> str:
        t = self.t
        if isinstance(value, dict | list | tuple):
            return render.flow(value)  # an empty collection
        style = node.style if node.tag == _STR else None
        if style == "|" and isinstance(value, str) and "\n" in value:
            first = t.line_end(start)
            body = t.s[first : t.end(node)]
            indent = len(body) - len(body.lstrip(" "))
            if indent > 0:
                text = render.literal(value, " " * indent, t.nl)
                if text is not None:
                    return text
        quote = style if style in ("'", '"') else None
        return render.scalar(value, quote=quote)

    # -- applying -------------------------------------------------------------------------

    def _take_break_before_end(self, merged: list[_Edit]) -> None:
        """Lines removed at the very end take the break before them too: no final newline appears."""
        s = self.t.s
        at = len(merged) - 1
        while at >= 0 and merged[at].start == merged[at].end == len(s):
            at -= 1  # insertions at the end bring their own leading break
        if at < 0 or merged[at].text or merged[at].end != len(s) or merged[at].start == 0:
            return
        edit = merged[at]
        before = merged[at - 1] if at > 0 else None
        if before is not None and before.end == edit.start and before.text.endswith("\n"):
            # new lines right before the removed tail: they end the text, without their break
            text = before.text.removesuffix("\n").removesuffix("\r")
            merged[at - 1] = _Edit(before.start, before.end, text, before.depth)
            return
        start = edit.start - (2 if s[edit.start - 2 : edit.start] == "\r\n" else 1)
        if before is not None and before.end > start:
            raise DeclineError("edit right before lines removed at the end")
        merged[at] = _Edit(start, edit.end, "", edit.depth)

    def _splice(self) -> str:
        edits = sorted(self.edits, key=lambda e: (e.start, e.end, -e.depth))
        merged: list[_Edit] = []
        for edit in edits:
            last = merged[-1] if merged else None
            if last is not None and _deletion(last) and _deletion(edit) and edit.start <= last.end:
                merged[-1] = _Edit(last.start, max(last.end, edit.end), "", last.depth)
            elif last is not None and edit.start < last.end:
                raise DeclineError("overlapping edits")
            else:
                merged.append(edit)
        s = self.t.s
        if not s.endswith("\n"):
            self._take_break_before_end(merged)
        parts: list[str] = []
        cursor = 0
        for edit in merged:
            parts.append(s[cursor : edit.start])
            parts.append(edit.text)
            cursor = edit.end
        parts.append(s[cursor:])
        return "".join(parts)


def _deletion(edit: _Edit) -> bool:
    return not edit.text and edit.end > edit.start


def _key_value(key: Node) -> Any:
    if not isinstance(key, ScalarNode):
        raise DeclineError("complex key")
    if key.tag == _STR:
        return key.value
    if key.tag == _MERGE:
        raise DeclineError("merge key")
    return SafeConstructor().construct_object(key)


def _block_of(node: Node, kind: type[MappingNode] | type[SequenceNode]) -> bool:
    return isinstance(node, kind) and not node.flow_style


def _with_items(layout: Layout, node: Node) -> Layout:
    """Use the sequence's own `-   item` spacing when it has one on its first line."""
    if not _block_of(node, SequenceNode):
        return layout
    first = node.value[0]
    offset = first.start_mark.column - node.start_mark.column
    if first.start_mark.line != node.start_mark.line or offset < 2:
        return layout
    return Layout(layout.map_step, layout.seq_offset, offset)
