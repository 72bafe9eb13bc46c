"""Split a YAML stream into documents that keep their exact source text.

    stream = split_stream(text)
    out = stream.join(doc.text if unchanged else edited for doc in stream.documents)
    assert stream.join(d.text for d in stream.documents) == text

A document's text runs from the end of the previous one up to the start of the next: leading
comments, directives and its `---` line, its content, an `...` line and whatever follows up to
the next document's header. Each piece parses on its own to the same value. Only a stream
without documents (nothing but comments or blank lines) has a non-empty `tail`.

Markers are found with a regex (a `---`/`...` at column 0 is always a document marker), which
costs ~3% of the libyaml load. Streams the regex cannot settle alone (a `%` line above a `---`
without `...`, or a document count that disagrees with libyaml's) are split on libyaml's events.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from dra_migrate.manifests.yamltext import kubeyaml

_MARKER = re.compile(r"^(?:(---)|\.\.\.)(?=[ \t\r\n]|\Z)", re.M)
# a line holding YAML content: not blank, not a comment, not a directive or a marker
CONTENT_LINE = re.compile(r"^\ufeff?(?!%|(?:---|\.\.\.)(?:[ \t\r\n]|\Z))[ \t]*[^ \t\r\n#\ufeff]", re.M)


class Document:
    __slots__ = ("end", "obj", "start", "text")

    def __init__(self, text: str, start: int, end: int, obj: Any) -> None:
        self.text = text  # exact source, parseable on its own
        self.start = start  # offsets of `text` in the stream
        self.end = end
        self.obj = obj  # what kubectl's reader makes of it (kubeyaml.KubeLoader)


class Stream:
    __slots__ = ("documents", "tail")

    def __init__(self, documents: tuple[Document, ...], tail: str) -> None:
        self.documents = documents
        self.tail = tail  # text outside every document: only for a stream without any

    def join(self, texts: Iterable[str]) -> str:
        return "".join(texts) + self.tail


def split_stream(text: str) -> Stream:
    objs = kubeyaml.load_all(text)
    if not objs:
        return Stream((), text)
    starts = scan_document_starts(text)
    if starts is None or len(starts) != len(objs):
        starts = event_document_starts(text)
    if len(starts) != len(objs) or starts[0] != 0:
        raise ValueError("cannot place the document boundaries of this stream")
    ends = [*starts[1:], len(text)]
    docs = tuple(Document(text[a:b], a, b, obj) for a, b, obj in zip(starts, ends, objs, strict=True))
    return Stream(docs, "")


def _line_end(text: str, pos: int) -> int:
    found = text.find("\n", pos)
    return len(text) if found < 0 else found + 1


def scan_document_starts(text: str) -> list[int] | None:
    starts: list[int] = []
    first = _MARKER.search(text)
    if CONTENT_LINE.search(text, 0, len(text) if first is None else first.start()):
        starts.append(0)  # an implicit first document
    after_end = -1  # where the last `...` line ended, while no `---` followed yet
    for marker in _MARKER.finditer(text):
        if marker.group(1) is None:
            after_end = _line_end(text, marker.end())
            continue
        if not starts:
            starts.append(0)
        elif after_end >= 0:
            starts.append(after_end)
        elif _directive_above(text, marker.start()):
            return None
        else:
            starts.append(marker.start())
        after_end = -1
    return starts


def _directive_above(text: str, pos: int) -> bool:
    """Whether a `%` line sits right above a `---` that no `...` preceded.

    libyaml takes it as a directive after a block collection but as more text of a root-level
    plain scalar; only its events can tell.
    """
    line_end = pos
    while line_end > 0:
        line_start = text.rfind("\n", 0, line_end - 1) + 1
        line = text[line_start:line_end]
        if line.startswith("%"):
            return True
        if line.strip() and not line.lstrip().startswith("#"):
            return False
        line_end = line_start
    return False


def event_document_starts(text: str) -> list[int]:
    base = 1 if text.startswith("\ufeff") else 0  # libyaml's marks skip the BOM
    starts: list[int] = []
    after_end = -1
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        start, end = event.start_mark, event.end_mark
        assert start is not None and end is not None  # libyaml always sets marks
        if isinstance(event, yaml.DocumentStartEvent):
            if not starts:
                starts.append(0)
            elif after_end >= 0:
                starts.append(after_end)
            else:
                starts.append(text.rfind("\n", 0, start.index + base) + 1)
        elif isinstance(event, yaml.DocumentEndEvent):
            after_end = _line_end(text, end.index + base) if event.explicit else -1
    return starts
