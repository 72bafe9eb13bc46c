"""Fit an object written for a target release to that release's types (engine.releases).

The object is walked along the fields its API version has in the target release:
- a field the target's type lacks is an error when set (strict decoding rejects it, a lenient one
  cuts it), and is dropped when set to an empty value ("", null, [], {}, false, 0: unset to Kubernetes);
- a set field whose +featureGate is off by default in the target is a warning: the apiserver
  silently drops such fields when the gate is off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from dra_migrate.engine import releases
from dra_migrate.engine.dra.unset import is_unset
from dra_migrate.engine.findings import Findings, PathParts, json_path
from dra_migrate.engine.releases import Field, Types
from dra_migrate.engine.versions import RESOURCE_GROUP, Target

# Top-level keys every object has outside its kind's struct table (TypeMeta, and status, which is dropped).
_OUTSIDE_TYPES = frozenset({"apiVersion", "kind", "status"})


class _Visit(NamedTuple):
    parent: dict[str, Any]
    parts: PathParts
    struct: str
    field: Field | None  # None: the target's struct has no such field
    value: Any


def _walk(node: Any, struct: str, types: Types, parts: PathParts, top: bool = False) -> Iterator[_Visit]:
    fields = types.struct(struct)
    if fields is None or not isinstance(node, dict):
        return
    for key, value in list(node.items()):
        if top and key in _OUTSIDE_TYPES:
            continue
        field = fields.get(str(key))
        yield _Visit(node, (*parts, str(key)), struct, field, value)
        if field is not None and not is_unset(value) and types.struct(field.type) is not None:
            yield from _descend(value, field.layers, field.type, types, (*parts, str(key)))


def _descend(value: Any, layers: tuple[str, ...], struct: str, types: Types, parts: PathParts) -> Iterator[_Visit]:
    if not layers:
        yield from _walk(value, struct, types, parts)
    elif layers[0] == "[]" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _descend(item, layers[1:], struct, types, (*parts, index))
    elif layers[0] == "map" and isinstance(value, dict):
        for key, item in value.items():
            yield from _descend(item, layers[1:], struct, types, (*parts, str(key)))


class Fitted(NamedTuple):
    ok: bool  # no set field is missing from the target's types
    dropped: bool  # empty fields the target lacks were removed


def fit_to_target(
    obj: dict[str, Any],
    kind: str,
    target: Target,
    findings: Findings,
    input_parts: Callable[[PathParts], PathParts],
) -> Fitted:
    """Walk `obj` (in the version the target serves, changed in place) and report what does not fit.

    Errors name the field where the input has it (`input_parts`), since the object is then left as is;
    warnings name it in the converted object.
    """
    version = str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
    release = target.release
    types = release.types(version)
    if types is None or kind not in types.kinds:
        return Fitted(True, False)
    missing: list[_Visit] = []
    dropped: list[_Visit] = []
    gated: list[tuple[PathParts, str]] = []
    admin: list[PathParts] = []
    for visit in list(_walk(obj, kind, types, (), top=True)):
        if visit.field is None and is_unset(visit.value):
            del visit.parent[str(visit.parts[-1])]
            dropped.append(visit)
        elif visit.field is None:
            missing.append(visit)
        elif not is_unset(visit.value):
            gate_message = _gated(visit.field, target)
            if gate_message:
                gated.append((visit.parts, gate_message))
            if visit.field.name == "adminAccess" and visit.value is True and release.admin_namespace_label:
                admin.append(visit.parts)
    for visit in missing:
        _missing(visit, version, target, findings, input_parts)
    ok = not missing
    for visit in dropped if ok else []:
        findings.info(
            "unset-field-dropped",
            json_path(*input_parts(visit.parts)),
            f"{visit.parts[-1]}: {json.dumps(visit.value)} means unset, and {RESOURCE_GROUP}/{version} "
            f"{visit.struct} has no such field in Kubernetes {target}; dropped",
        )

    def where(parts: PathParts) -> str:  # on an error the object stays as it was: name the input's fields
        return json_path(*(parts if ok else input_parts(parts)))

    for parts, message in gated:
        findings.warning("feature-gate-off", where(parts), message)
    for parts in admin:
        label = release.admin_namespace_label
        findings.warning("admin-access", where(parts), f'adminAccess needs the namespace label {label}: "true"')
    return Fitted(ok, bool(dropped))


def _missing(
    visit: _Visit, version: str, target: Target, findings: Findings, input_parts: Callable[[PathParts], PathParts]
) -> None:
    name = str(visit.parts[-1])
    added = releases.first_with_field(version, visit.struct, name, target.minor)
    since = f" (added in Kubernetes 1.{added})" if added else ""
    findings.error(
        "field-not-in-target",
        json_path(*input_parts(visit.parts)),
        f"{name}: {RESOURCE_GROUP}/{version} {visit.struct} has no such field in Kubernetes {target}{since}; "
        "the apiserver would reject or cut the object; left as is",
    )


def _gated(field: Field, target: Target) -> str | None:
    """The warning for a set field whose feature gate is off by default in the target, if it is."""
    off = [gate for gate in field.gates if not target.release.gate_on(gate)]
    if not off:
        return None
    states = "; ".join(_gate_state(gate, target) for gate in off)
    return (
        f"{field.name} needs feature gate {' and '.join(off)} ({states}): when it is off the apiserver "
        "silently drops the field"
    )


def _gate_state(name: str, target: Target) -> str:
    gate = target.release.gate(name)
    return f"{name} is {gate.describe()} in {target}" if gate else f"{name} does not exist in {target}"


def fields_of(struct: str, version: str = "v1") -> Mapping[str, Field]:
    """A struct's fields in the newest known release (the hub form the readers produce)."""
    types = releases.newest().types(version)
    fields = types.struct(struct) if types else None
    if fields is None:
        raise LookupError(f"{RESOURCE_GROUP}/{version} {struct} is not in the release table")
    return fields
