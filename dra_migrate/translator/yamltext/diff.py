"""Structural diff between two plain YAML values (dicts, lists, scalars).

The ops are position-free (paths of keys and indexes), so the surgical text editor and the
ruamel fallback apply the very same change set.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

Path = tuple[Any, ...]


class Replace(NamedTuple):
    path: Path
    value: Any


class RemoveKey(NamedTuple):
    path: Path  # the mapping
    key: Any


class AddKeys(NamedTuple):
    path: Path  # the mapping; items are appended at its end, in `new`'s order
    items: tuple[tuple[Any, Any], ...]


class AppendItems(NamedTuple):
    path: Path
    items: tuple[Any, ...]


class RemoveItems(NamedTuple):
    path: Path
    indexes: tuple[int, ...]  # ascending


Op = Replace | RemoveKey | AddKeys | AppendItems | RemoveItems


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
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _scalar_kind(x: Any) -> type:
    # str subclasses (e.g. ruamel's quoted strings) are still strings
    return str if isinstance(x, str) else type(x)


def diff(old: Any, new: Any) -> list[Op]:
    ops: list[Op] = []
    _diff(old, new, (), ops)
    return ops


def _diff(old: Any, new: Any, path: Path, ops: list[Op]) -> None:
    # collections recurse instead of comparing first: one pass over unchanged subtrees
    if old is new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        _diff_dict(old, new, path, ops)
    elif isinstance(old, list) and isinstance(new, list):
        _diff_list(old, new, path, ops)
    elif not same(old, new):
        ops.append(Replace(path, new))


def _diff_dict(old: dict[Any, Any], new: dict[Any, Any], path: Path, ops: list[Op]) -> None:
    removed = [k for k in old if k not in new]
    added = tuple((k, v) for k, v in new.items() if k not in old)
    if not new:
        if old:  # an emptied block mapping has no text form left; write `{}` instead
            ops.append(Replace(path, new))
        return
    ops.extend(RemoveKey(path, k) for k in removed)
    for k, v in new.items():
        if k in old:
            _diff(old[k], v, (*path, k), ops)
    if added:
        ops.append(AddKeys(path, added))


def _diff_list(old: list[Any], new: list[Any], path: Path, ops: list[Op]) -> None:
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
        _diff(old[i], new[i], (*path, i), ops)
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


def get_path(value: Any, path: Path) -> Any:
    for part in path:
        value = value[part]
    return value
