"""Where converted text goes on stdout: YAML text or one JSON value. Files (a mirror tree with
--output-dir, or the input itself with --in-place) are written atomically (manifests.atomicwrite).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from dra_migrate.translator.reading.inputs import newline_of


class StdoutWriter:
    """Concatenates outputs; YAML streams from several files are kept apart by a document separator.

    A JSON file's output first in a stream of several would make kubectl read the whole stream as
    JSON (it judges by the first character) and fail at the next `---`: so the first output waits
    until the next arrives, and a JSON one then opens with `---`, which makes the stream YAML (JSON
    documents are YAML). A run with one JSON file still prints plain JSON."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._written_any = False
        self._first: str | None = None

    def write(self, text: str) -> None:
        if not text:
            return
        if not self._written_any and self._first is None:
            self._first = text
            return
        if self._first is not None:
            first, self._first = self._first, None
            if first.lstrip().startswith(("{", "[")):
                self.stream.write(f"---{newline_of(first)}")
            self._put(first)
        self._put(text)

    def _put(self, text: str) -> None:
        nl = newline_of(text)
        if self._written_any:
            self.stream.write(f"---{nl}" if not text.startswith("---") else "")
        self.stream.write(text if text.endswith("\n") else text + nl)
        self._written_any = True

    def finish(self) -> None:
        if self._first is not None:
            first, self._first = self._first, None
            self._put(first)


class JsonWriter:
    """`-o json`: every output object as one JSON value, like kubectl: the object, or a v1 List."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.objects: list[Any] = []

    def add(self, objects: list[Any]) -> None:
        for obj in objects:
            if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
                self.objects.extend(obj["items"])
            elif isinstance(obj, dict):
                self.objects.append(obj)

    def finish(self) -> None:
        if not self.objects:
            return
        objects = self.objects
        value = objects[0] if len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
        json.dump(value, self.stream, indent=4, ensure_ascii=False, default=str)
        self.stream.write("\n")
