"""Bounds on what one document may expand to: alias bombs, self-containing anchors, deep nesting.

PyYAML builds aliased nodes as shared objects, so a 500-byte "billion laughs" document loads in
milliseconds and explodes later, in every walk over it. kubectl refuses such documents (go-yaml
v2, decode.go: "document contains excessive aliasing"; scannerc.go: "exceeded max depth of
10000"); the translator applies the same aliasing rule and a nesting bound its recursive code can
follow, and reports either as an error naming the file and document.

The exact walk runs only when cheap text checks say it could fail: aliases need both `&` and `*`,
and a document nests at most one level per bracket plus two per column of block indentation.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 500  # no Kubernetes object comes close; the engine and editors recurse once or twice per level
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"  # the refusal, whoever finds the nesting first
RECURSION_LIMIT = 20_000  # Python frames for MAX_DEPTH levels through the engine, editors and dumpers

# go-yaml v2 decode.go allowedAliasRatio: the share of decoded nodes that may come from aliases
_RATIO_LOW, _RATIO_HIGH = 400_000, 4_000_000
_INDENT = re.compile(rf"^[ \t?-]{{{(MAX_DEPTH - 2) // 4}}}", re.M)


class LimitError(ValueError):
    pass


# libyaml 0.2.6 (PyYAML 6.0.4's wheels) refuses nesting beyond 1,000 levels itself, in these words.
_LIBYAML_DEPTH_PROBLEM = "exceeded maximum nesting depth"


def parser_problem(exc: Exception) -> str:
    """What a YAML parser refused, in one line; its own depth bound reads as MAX_DEPTH's refusal."""
    problem = str(getattr(exc, "problem", None) or str(exc).splitlines()[0])
    return TOO_DEEP if problem == _LIBYAML_DEPTH_PROBLEM else problem


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def might_exceed(text: str) -> bool:
    """False when the text alone shows the document is within bounds (the common case, in C speed)."""
    return ("&" in text and "*" in text) or might_nest_too_deep(text)


def might_nest_too_deep(text: str) -> bool:
    """The nesting part of `might_exceed`, for a caller that has ruled out anchors and aliases."""
    brackets = text.count("[") + text.count("{")
    return brackets * 2 > MAX_DEPTH or _INDENT.search(text) is not None


def check_document(text: str, obj: Any) -> None:
    """`check` the object parsed from `text`, when the text says it could fail."""
    if might_exceed(text):
        check(obj)


def check(obj: Any) -> None:
    """Raise LimitError when `obj` nests deeper than MAX_DEPTH, contains itself, or is mostly aliases."""
    sizes: dict[int, int] = {}  # expanded node count of each container, by identity
    unique = 0  # nodes as written (each container once)
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = node.values() if isinstance(node, dict) else node
            total = 1 + (len(node) if isinstance(node, dict) else 0)
            total += sum(sizes.get(id(c), 1) if isinstance(c, dict | list) else 1 for c in children)
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise LimitError("an anchor contains an alias of itself")
        if len(on_path) >= MAX_DEPTH:
            raise LimitError(TOO_DEEP)
        on_path.add(key)
        stack.append((node, True))
        children = list(node.values()) if isinstance(node, dict) else node
        unique += 1 + (len(node) if isinstance(node, dict) else 0)
        for child in children:
            if isinstance(child, dict | list):
                if id(child) in on_path:
                    raise LimitError("an anchor contains an alias of itself")
                stack.append((child, False))
            else:
                unique += 1
    decoded = sizes.get(id(obj), 1)
    aliased = decoded - unique
    if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
        raise LimitError(
            f"excessive aliasing: {unique:,} nodes as written expand to {decoded:,} through anchors and aliases "
            "(kubectl refuses this too)"
        )
