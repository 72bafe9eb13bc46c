"""The other edit the translator makes: resource.k8s.io v1beta1 objects moved to v1.

apiVersion changes, and each device request's fields move under `exactly:`. Runs over the
shared DRA corpus when present, plus an inline excerpt with commented-out fields.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import corpus
import pytest
from yamltext_support import removed_line_ranges

from dra_migrate.manifests.yamltext import edit_document, kubeyaml, split_stream

CORPUS = corpus.CORPUS / "dra-versions"
_MOVED = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations")


def to_v1(obj: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    new = copy.deepcopy(obj)
    removed: list[tuple[Any, ...]] = []
    if not isinstance(new, dict) or new.get("apiVersion") != "resource.k8s.io/v1beta1":
        return new, removed
    new["apiVersion"] = "resource.k8s.io/v1"

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, dict):
            requests = node.get("requests")
            if path[-1:] == ("devices",) and isinstance(requests, list):
                for i, request in enumerate(requests):
                    moved = {k: request.pop(k) for k in _MOVED if k in request}
                    removed.extend((*path, "requests", i, k) for k in moved)
                    if moved:
                        request["exactly"] = moved
            for key, value in node.items():
                walk(value, (*path, key))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, (*path, i))

    walk(new, ())
    return new, removed


def check(text: str, obj: Any) -> str:
    new, removed = to_v1(obj)
    result = edit_document(text, obj, new)
    assert result.method == "surgical", result.reason
    assert kubeyaml.load(result.text) == new
    skip = removed_line_ranges(text, removed)
    kept = [line for i, line in enumerate(text.splitlines(keepends=True)) if i not in skip]
    got = iter(result.text.splitlines(keepends=True))
    for line in kept:
        if "apiVersion: resource.k8s.io/v1beta1" not in line:
            variants = (line, line + "\n", _behind_dash(line))
            assert any(other in variants for other in got), f"lost {line!r}"
    return result.text


def _behind_dash(line: str) -> str:
    """The line once the keys before it in a `- ` item went: it moves up behind the dash."""
    indent = len(line) - len(line.lstrip(" "))
    return " " * (indent - 2) + "- " + line[indent:] if indent >= 2 else line


_FILES = corpus.params(
    [
        p
        for p in corpus.manifests("dra-versions", suffixes=(".yaml", ".yml"))
        if "resource.k8s.io/v1beta1" in p.read_text(encoding="utf-8")
    ],
    "dra-versions",
)


@pytest.mark.parametrize("path", _FILES, ids=lambda p: str(p.relative_to(CORPUS))[-70:])
def test_corpus_file(path: Path) -> None:
    for doc in split_stream(path.read_text(encoding="utf-8")).documents:
        check(doc.text, doc.obj)


INTEL = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
spec:
  spec:
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.intel.com
##
## if one is not enough
#        count: 2
"""
INTEL_V1 = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.intel.com
##
## if one is not enough
#        count: 2
"""


def test_intel_excerpt_keeps_commented_out_fields_after_the_request() -> None:
    assert check(INTEL, kubeyaml.load(INTEL)) == INTEL_V1


def test_first_key_of_a_request_moves() -> None:
    text = (
        "apiVersion: resource.k8s.io/v1beta1\nspec:\n  devices:\n    requests:\n"
        "    - deviceClassName: gpu\n      name: g\n"
    )
    assert check(text, kubeyaml.load(text)) == (
        "apiVersion: resource.k8s.io/v1\nspec:\n  devices:\n    requests:\n    - name: g\n"
        "      exactly:\n        deviceClassName: gpu\n"
    )
