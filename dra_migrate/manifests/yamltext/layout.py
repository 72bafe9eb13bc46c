"""Positions of composed nodes in the document text, and the document's indentation habits."""

from __future__ import annotations

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from dra_migrate.manifests.yamltext.shapes import DeclineError, Layout

_SCAN_LIMIT = 4000  # nodes looked at when guessing the layout; real evidence is near the edit


class Text:
    """One document's text; libyaml marks count characters but skip a leading BOM."""

    __slots__ = ("base", "nl", "s")

    def __init__(self, s: str) -> None:
        self.s = s
        self.base = 1 if s.startswith("\ufeff") else 0
        first = s.find("\n")
        self.nl = "\r\n" if first > 0 and s[first - 1] == "\r" else "\n"

    def start(self, node: Node) -> int:
        return int(node.start_mark.index) + self.base

    def mark_end(self, node: Node) -> int:
        return int(node.end_mark.index) + self.base

    def end(self, node: Node) -> int:
        """End of the node's own text: block collections' marks run on to the next token."""
        while isinstance(node, MappingNode | SequenceNode) and not node.flow_style:
            if isinstance(node, MappingNode):
                key, last = node.value[-1]
                if self.start(last) < self.mark_end(key):
                    raise DeclineError("alias as last value")
            else:
                last = node.value[-1]
            node = last
        end = self.mark_end(node)
        if isinstance(node, ScalarNode) and node.style in ("|", ">"):
            # a block scalar's mark includes its trailing line breaks
            start = self.start(node)
            while end > start and self.s[end - 1] in " \t\r\n":
                end -= 1
        return end

    def line_start(self, pos: int) -> int:
        return self.s.rfind("\n", 0, pos) + 1

    def line_end(self, pos: int) -> int:
        """Position after the line break of the line holding `pos` (or the text's end)."""
        found = self.s.find("\n", pos)
        return len(self.s) if found < 0 else found + 1

    def after_colon(self, key: Node) -> int:
        if key.start_mark.line != key.end_mark.line:
            raise DeclineError("multi-line key")
        pos = self.mark_end(key)
        while pos < len(self.s) and self.s[pos] in " \t":
            pos += 1
        if pos >= len(self.s) or self.s[pos] != ":":
            raise DeclineError("key without a plain `:` after it")
        return pos + 1

    def skip_inner_comments(self, pos: int, min_indent: int) -> int:
        """Step over comment lines indented at least `min_indent`: they sit inside the block above,
        while shallower ones introduce whatever follows it."""
        best = pos
        s = self.s
        while pos < len(s):
            end = self.line_end(pos)
            body = s[pos:end].lstrip(" ")
            if not body.strip():
                pos = end
                continue
            if not body.startswith("#") or end - pos - len(body) < min_indent:
                break
            best = pos = end
        return best


def detect_layout(chain: list[Node]) -> Layout:
    """Indentation habits, taken from the nodes nearest to the edit first."""
    found: dict[str, int] = {}
    seen: set[int] = set()
    budget = _SCAN_LIMIT
    for node in reversed(chain):
        budget = _scan(node, found, seen, budget)
        if len(found) == 3 or budget <= 0:
            break
    return Layout(
        map_step=found.get("map", 2),
        seq_offset=found.get("seq", 0),
        item_offset=found.get("item", 2),
    )


def _block(node: Node) -> bool:
    return isinstance(node, MappingNode | SequenceNode) and not node.flow_style and bool(node.value)


def _scan(root: Node, found: dict[str, int], seen: set[int], budget: int) -> int:
    stack = [root]
    while stack and budget > 0 and len(found) < 3:
        node = stack.pop()
        if id(node) in seen or not _block(node):
            continue
        seen.add(id(node))
        budget -= 1
        if isinstance(node, MappingNode):
            column = node.start_mark.column
            for _, value in node.value:
                if _block(value):
                    step = value.start_mark.column - column
                    if isinstance(value, MappingNode) and step > 0:
                        found.setdefault("map", step)
                    elif isinstance(value, SequenceNode) and step >= 0:
                        found.setdefault("seq", step)
                    stack.append(value)
        else:
            first = node.value[0]
            offset = first.start_mark.column - node.start_mark.column
            if first.start_mark.line == node.start_mark.line and offset >= 2:
                found.setdefault("item", offset)
            stack.extend(item for item in reversed(node.value) if _block(item))
    return budget
