"""The JSON Patch (RFC 6902) that turns the Pod kube-apiserver sent into the converted one.

jsonpatch serializes every item of every list it meets to match items up, unchanged lists
included, which made it most of a review's CPU time. The engine changes a few small subtrees
of a large object, so the walk is done here down to what changed: equal subtrees are
skipped, mapping keys added or removed become add/remove, lists of the same length are
compared item by item, and jsonpatch diffs each list whose length changed (where matching
items up, and the order of the operations, matter).
"""

from __future__ import annotations

import json
import marshal
from typing import Any

import jsonpatch

Operation = dict[str, Any]


def _escape(key: str) -> str:
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


def _same(old: Any, new: Any) -> bool:
    # Python equality alone treats 1, 1.0 and True as equal; JSON does not. marshal's format 2
    # tells them apart (and ignores object identity and interning), five times faster than JSON.
    if type(old) is not type(new) or old != new:
        return False
    if isinstance(old, dict | list):
        try:
            return marshal.dumps(old, 2) == marshal.dumps(new, 2)
        except ValueError:  # a type marshal does not know: compare as JSON
            return json.dumps(old) == json.dumps(new)
    return True


def _prefixed(operations: list[Operation], pointer: str) -> list[Operation]:
    out = []
    for operation in operations:
        moved = {"path": pointer + operation["path"]}
        if "from" in operation:
            moved["from"] = pointer + operation["from"]
        out.append({**operation, **moved})
    return out


def _diff(old: Any, new: Any, pointer: str, out: list[Operation]) -> None:
    """Operations for two values that are not the same (`_same`); equal children are skipped
    before their path is even built, since most of a pod is left as it was."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                out.append({"op": "remove", "path": f"{pointer}/{_escape(key)}"})
        for key, value in new.items():
            if key not in old:
                out.append({"op": "add", "path": f"{pointer}/{_escape(key)}", "value": value})
            elif not _same(before := old[key], value):
                _diff(before, value, f"{pointer}/{_escape(key)}", out)
        return
    if isinstance(old, list) and isinstance(new, list):
        if len(old) == len(new):
            for index, (before, after) in enumerate(zip(old, new, strict=True)):
                if not _same(before, after):
                    _diff(before, after, f"{pointer}/{index}", out)
        else:
            out.extend(_prefixed(jsonpatch.make_patch(old, new).patch, pointer))
        return
    out.append({"op": "replace", "path": pointer, "value": new})


def make_patch(original: dict[str, Any], converted: dict[str, Any]) -> list[Operation]:
    """Operations that, applied to `original`, give exactly `converted`."""
    out: list[Operation] = []
    if not _same(original, converted):
        _diff(original, converted, "", out)
    return out
