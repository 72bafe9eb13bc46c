"""JSON 6902 patches of a converted base, rewritten to the DRA form of what they meant.

An overlay's `op: replace` on `/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu`
no longer finds its path once the base is converted (or, where the map stays, it sets a device-plugin
count beside the base's claim). The patch is rewritten so that the converted base, patched, is the
conversion of the patched original: the operations that touch no mapped device are kept as written,
the ones that do are replaced by the operations between the converted base and that conversion (a
template name for the new count, claims added or removed). Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import jsonpatch
import jsonpointer

from dra_migrate.engine import Config, DeviceRequestSpec, Severity, convert

Operation = dict[str, Any]


class Rewrite(NamedTuple):
    operations: list[Operation] | None  # None: the patch touches no mapped device (left as written)
    templates: list[dict[str, Any]]  # templates the new operations reference that the base's conversion lacks
    problem: str | None = None  # why the patch cannot be rewritten exactly


def operations_of(document: Any) -> list[Operation] | None:
    """The operations of a JSON 6902 patch document, or None for anything else (a strategic-merge patch)."""
    if isinstance(document, list) and document and all(isinstance(o, dict) and "op" in o for o in document):
        return document
    return None


def _mapped(name: Any, config: Config) -> bool:
    return isinstance(name, str) and isinstance(config.mappings.resolve(name), DeviceRequestSpec)


def _mentions(value: Any, config: Config) -> bool:
    """Whether a value holds a mapped device name as a key, at any depth."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if any(_mapped(key, config) for key in item):
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _touches_devices(operation: Operation, state: Any, config: Config) -> bool:
    """Whether an operation names a mapped device in its path or value, or replaces a value holding one."""
    for key in ("path", "from"):
        pointer = operation.get(key)
        if not isinstance(pointer, str):
            continue
        try:
            parts = jsonpointer.JsonPointer(pointer).parts
        except jsonpointer.JsonPointerException:
            continue
        if any(_mapped(part, config) for part in parts):
            return True
        try:
            if _mentions(jsonpointer.resolve_pointer(state, pointer), config):
                return True
        except jsonpointer.JsonPointerException:
            pass
    return _mentions(operation.get("value"), config)


def _apply(state: Any, operations: Sequence[Operation]) -> Any:
    """The operations applied as kustomize applies them (evanphx/json-patch v4): a `replace` of a key
    a mapping lacks sets it, like an `add`."""
    for operation in operations:
        state = jsonpatch.apply_patch(state, [_as_kustomize_reads(state, operation)], in_place=False)
    return state


def apply_as_kustomize(state: Any, operations: Sequence[Operation]) -> Any | None:
    """The operations applied as kustomize applies them; None where one does not apply."""
    try:
        return _apply(state, operations)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
        return None


def _as_kustomize_reads(state: Any, operation: Operation) -> Operation:
    if operation.get("op") != "replace" or not isinstance(operation.get("path"), str):
        return operation
    try:
        parts = jsonpointer.JsonPointer(operation["path"]).parts
        parent = jsonpointer.JsonPointer.from_parts(parts[:-1]).resolve(state) if parts else None
    except jsonpointer.JsonPointerException:
        return operation
    if isinstance(parent, dict) and parts[-1] not in parent:
        return {**operation, "op": "add"}
    return operation


def _describe(operation: Operation) -> str:
    return f"`{operation.get('op')} {operation.get('path')}`"


def _rewrite_one(operations: list[Operation], target: dict[str, Any], config: Config) -> Rewrite:
    device = []
    state = target
    failed: str | None = None  # the first operation that does not apply here
    for operation in operations:
        device.append(_touches_devices(operation, state, config))
        try:
            state = _apply(state, [operation])
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            failed = failed or f"{_describe(operation)} does not apply to what its bases render: {exc}"
    if not any(device):
        return Rewrite(None, [])  # kept as written, whatever kustomize makes of it: never a reason to refuse
    if failed is not None:
        return Rewrite(None, [], failed)
    guard = next((o for o, touches in zip(operations, device, strict=True) if touches and o.get("op") == "test"), None)
    if guard is not None:  # rewriting would drop the guard: the patch would apply whatever the base holds
        return Rewrite(None, [], f"{_describe(guard)} guards a device request, which the base's conversion removes")
    before = convert(copy.deepcopy(target), config)
    after = convert(state, config)
    errors = [f for f in after.findings if f.severity is Severity.ERROR]
    if errors:
        return Rewrite(None, [], f"the patched object cannot be converted: {errors[0].message}")
    if before.object is None or after.object is None:
        return Rewrite(None, [], "the conversion drops the object")
    kept = [o for o, touches in zip(operations, device, strict=True) if not touches]
    try:
        base_kept = _apply(before.object, kept)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        return Rewrite(None, [], f"an operation of it no longer applies to the converted base: {exc}")
    added = jsonpatch.make_patch(base_kept, after.object).patch
    # in the place of the first device operation, where the other operations commute with them
    first = device.index(True)
    rest = [o for index, o in enumerate(operations) if index > first and not device[index]]
    candidates = [operations[:first] + added + rest, kept + added]
    rewritten = next((c for c in candidates if _gives(before.object, c, after.object)), None)
    if rewritten is None:
        return Rewrite(None, [], "its operations cannot be rewritten to give the converted object")
    known = {t["metadata"]["name"] for t in before.templates}
    return Rewrite(rewritten, [t for t in after.templates if t["metadata"]["name"] not in known])


def _gives(start: Any, operations: list[Operation], expected: Any) -> bool:
    try:
        return bool(_apply(start, operations) == expected)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
        return False


def rewrite(operations: list[Operation], targets: Iterable[dict[str, Any]], config: Config) -> Rewrite:
    """The patch's DRA form for every object it targets: one form, or a problem when they need different ones."""
    found: Rewrite | None = None
    for target in targets:
        one = _rewrite_one(operations, target, config)
        if one.problem is not None:
            return one
        if found is not None and found.operations != one.operations:
            return Rewrite(None, [], "the objects it targets need different rewrites")
        if found is None:
            found = one
        elif one.templates:
            known = {t["metadata"]["name"] for t in found.templates}
            found.templates.extend(t for t in one.templates if t["metadata"]["name"] not in known)
    if found is None:
        matched_none = Rewrite(None, [], "no object of its bases matches its target")
        return matched_none if names_devices(operations, config) else Rewrite(None, [])
    return found


def names_devices(operations: Iterable[Operation], config: Config) -> bool:
    """Whether any operation names a mapped device in its path or value (no object to look into)."""
    return any(_touches_devices(o, {}, config) for o in operations)
