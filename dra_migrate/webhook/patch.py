"""The JSON Patch (RFC 6902) of a converted Pod: the engine's change set (engine/changes.py) in
JSON Patch's words, applied by kube-apiserver to the Pod it sent.

Nothing is compared here: each change becomes its operations as it is. Removed list items go
last first, so that every index names the item it did before the removal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dra_migrate.engine import AddKeys, AppendItems, Change, ChangePath, RemoveItems, RemoveKey, Replace

Operation = dict[str, Any]


def _token(part: object) -> str:
    token = str(part)
    return token.replace("~", "~0").replace("/", "~1") if "~" in token or "/" in token else token


def _pointer(path: ChangePath) -> str:
    """A JSON Pointer (RFC 6901): `~` and `/` in a key escaped."""
    return "".join(["/" + _token(part) for part in path])


def json_patch(changes: Iterable[Change]) -> list[Operation]:
    """Operations that, applied to the engine's input, give exactly its output."""
    out: list[Operation] = []
    for change in changes:
        if isinstance(change, Replace):
            out.append({"op": "replace", "path": _pointer(change.path), "value": change.value})
        elif isinstance(change, RemoveKey):
            out.append({"op": "remove", "path": _pointer((*change.path, change.key))})
        elif isinstance(change, AddKeys):
            out += [{"op": "add", "path": _pointer((*change.path, k)), "value": v} for k, v in change.items]
        elif isinstance(change, AppendItems):
            end = _pointer(change.path) + "/-"
            out += [{"op": "add", "path": end, "value": item} for item in change.items]
        else:
            assert isinstance(change, RemoveItems)
            out += [{"op": "remove", "path": _pointer((*change.path, i))} for i in reversed(change.indexes)]
    return out
