"""A conversion's change set: what turns the object the engine was given into the one it returns.

Changes are position-free (paths of keys and indexes) and exact for JSON and YAML alike (1, 1.0 and
True are different values), so each edge builds its own form of the same change set: the webhook's
JSON Patch (webhook/patch.py), the translator's text edit and its ruamel fallback (manifests/yamltext).

The engine's rules edit one copy of the object in place, each where it knows to (about forty rules,
in several modules); rather than have every one of them report its edits, the change set is found
once, when a result is asked for it, by one walk down the input and the copy (ConversionResult.changes).
The translator also uses `changes` for the edits it makes itself (a kustomization's patch list).
"""

from __future__ import annotations

import marshal
import math
from typing import Any, NamedTuple

ChangePath = tuple[Any, ...]


class Replace(NamedTuple):
    path: ChangePath
    value: Any


class RemoveKey(NamedTuple):
    path: ChangePath  # the mapping
    key: Any


class AddKeys(NamedTuple):
    path: ChangePath  # the mapping; items are appended at its end, in `new`'s order
    items: tuple[tuple[Any, Any], ...]


class AppendItems(NamedTuple):
    path: ChangePath
    items: tuple[Any, ...]


class RemoveItems(NamedTuple):
    path: ChangePath
    indexes: tuple[int, ...]  # ascending


Change = Replace | RemoveKey | AddKeys | AppendItems | RemoveItems


def same(a: Any, b: Any) -> bool:
    """Equality that, unlike ==, tells 1 from True and 1 from 1.0 (YAML renders them differently)."""
    if a is b:
        return True
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        return all(k in b and same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(b, dict | list | tuple) or _scalar_kind(a) is not _scalar_kind(b):
        return False
    if isinstance(a, float):  # NaN is itself; -0.0 is not 0.0 (JSON and YAML write them apart)
        return math.isnan(b) if math.isnan(a) else a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _scalar_kind(x: Any) -> type:
    # str subclasses (e.g. ruamel's quoted strings) are still strings
    return str if isinstance(x, str) else type(x)


def changes(old: Any, new: Any) -> list[Change]:
    """The changes that turn `old` into `new`, in an order in which each applies to the result of those before."""
    ops: list[Change] = []
    if not _unchanged(old, new):
        _diff(old, new, (), ops)
    return ops


def _unchanged(old: Any, new: Any) -> bool:
    """The quick answer for an untouched subtree (most of an object): equal in Python's terms,
    compared in C, and in exact types too: marshal's format 2 tells 1, 1.0 and True apart and ignores
    object identity. `same` decides what marshal cannot write (YAML timestamps, ruamel's strings)."""
    if old is new:
        return True
    if type(old) is not type(new) or old != new:
        return False
    if type(old) is dict or type(old) is list:  # exact types: marshal refuses subclasses
        try:
            return marshal.dumps(old, 2) == marshal.dumps(new, 2)
        except ValueError:
            return same(old, new)
    return not isinstance(old, dict | list | float) or same(old, new)


def _diff(old: Any, new: Any, path: ChangePath, ops: list[Change]) -> None:
    """Changes for two values that are not `_unchanged`; only the children that changed are visited
    (their path is not even built otherwise)."""
    if isinstance(old, dict) and isinstance(new, dict):
        _diff_dict(old, new, path, ops)
    elif isinstance(old, list) and isinstance(new, list):
        _diff_list(old, new, path, ops)
    elif not same(old, new):
        ops.append(Replace(path, new))


def _diff_dict(old: dict[Any, Any], new: dict[Any, Any], path: ChangePath, ops: list[Change]) -> None:
    if not new:
        if old:  # an emptied block mapping has no text form left; write `{}` instead
            ops.append(Replace(path, new))
        return
    for k in old:
        if k not in new:
            ops.append(RemoveKey(path, k))
    added = []
    for k, v in new.items():
        if k not in old:
            added.append((k, v))
        elif not _unchanged(before := old[k], v):
            _diff(before, v, (*path, k), ops)
    if added:
        ops.append(AddKeys(path, tuple(added)))


def _diff_list(old: list[Any], new: list[Any], path: ChangePath, ops: list[Change]) -> None:
    if not old or not new:
        if old or new:
            ops.append(Replace(path, new))
        return
    common = min(len(old), len(new))
    if len(new) < len(old):
        kept = _subsequence(old, new)
        if kept is not None:
            ops.append(RemoveItems(path, tuple(i for i in range(len(old)) if i not in kept)))
            return
    # edited in place, then grown or cut at the end
    for i in range(common):
        if not _unchanged(before := old[i], after := new[i]):
            _diff(before, after, (*path, i), ops)
    if len(new) > common:
        ops.append(AppendItems(path, tuple(new[common:])))
    elif len(old) > common:
        ops.append(RemoveItems(path, tuple(range(common, len(old)))))


def _subsequence(old: list[Any], new: list[Any]) -> set[int] | None:
    """Indexes of `old` that make up `new` when `new` only drops items (greedy match)."""
    kept: set[int] = set()
    i = 0
    for item in new:
        while i < len(old) and not same(old[i], item):
            i += 1
        if i == len(old):
            return None
        kept.add(i)
        i += 1
    return kept


def get_path(value: Any, path: ChangePath) -> Any:
    for part in path:
        value = value[part]
    return value
