"""The line of a finding in its input file, for reports that point at lines (SARIF, JUnit, annotations).

A document knows where its text lies in the file and the line that text starts on (counted once per
file while converting, pipeline.DocumentReport). Here, only for documents that have findings, the
line of its content (past leading comments and `---`) and of the fields its findings name are found;
a field is located by composing that one document's text with libyaml, never the whole file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import yaml

from dra_migrate.manifests.yamltext.split import CONTENT_LINE
from dra_migrate.translator.conversion.pipeline import DocumentReport

# One step of a finding's path (engine.json_path): `.key`, `[3]` or `["some.key"]`.
_MERGE = "tag:yaml.org,2002:merge"
_STEP = re.compile(r'\.?(?:([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\["([^"]*)"\])')


class _Composer(yaml.CSafeLoader):
    """libyaml's composer without tag resolution (the Python half of its cost): only merge keys matter."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and value == "<<" and implicit[0]:
            return _MERGE
        return ""


def document_line(text: str, report: DocumentReport) -> int:
    """The line of the document's first content, else the line its text starts on."""
    found = CONTENT_LINE.search(text, report.start, report.end)
    if found is None:
        return report.first_line
    return report.first_line + text.count("\n", report.start, found.start())


@functools.lru_cache(maxsize=4096)  # a tree's findings name the same few paths over and over
def path_steps(path: str) -> tuple[str | int, ...]:
    """The keys and indexes of a finding's path, as far as they can be read."""
    steps: list[str | int] = []
    position = 0
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None or step.end() == position:
            break
        key, index, quoted = step.groups()
        steps.append(int(index) if index is not None else key if key is not None else quoted)
        position = step.end()
    return tuple(steps)


def field_lines(text: str, report: DocumentReport, paths: Iterable[str]) -> dict[str, int]:
    """The line of each path in the document: of its key, or of the deepest part of it that exists.

    Paths reaching no part of the document, and documents libyaml cannot compose on their own, get
    no entry (the caller uses the document's line).
    """
    wanted = [path for path in set(paths) if path]
    if not wanted:
        return {}
    try:
        root = yaml.compose(text[report.start : report.end], Loader=_Composer)
    except (yaml.YAMLError, ValueError, RecursionError):
        return {}
    if root is None:
        return {}
    lines: dict[str, int] = {}
    for path in wanted:
        node = _deepest(root, path_steps(path))
        if node is not None:
            lines[path] = report.first_line + node.start_mark.line
    return lines


def _deepest(root: yaml.Node, steps: tuple[str | int, ...]) -> yaml.Node | None:
    """The node of the last step found (a mapping's key node, so the line reads `key:`), or None."""
    node: yaml.Node = root
    found: yaml.Node | None = None
    for step in steps:
        located = _child(node, step)
        if located is None:
            break
        found, node = located
    return found


def _child(node: yaml.Node, step: str | int) -> tuple[yaml.Node, yaml.Node] | None:
    """(where the step is written, its value) in a mapping (merge keys included) or a sequence."""
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int):
        if 0 <= step < len(node.value):
            item: yaml.Node = node.value[step]
            return item, item
        return None
    if not isinstance(node, yaml.MappingNode):
        return None
    merged: list[yaml.Node] = []
    for key, value in node.value:
        if key.tag == _MERGE:
            merged.extend(value.value if isinstance(value, yaml.SequenceNode) else [value])
        elif isinstance(key, yaml.ScalarNode) and key.value == str(step):
            return key, value
    for source in merged:
        located = _child(source, step)
        if located is not None:
            return located
    return None
