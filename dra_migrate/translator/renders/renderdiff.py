"""Whether a converted tree renders the conversion of what it rendered before: the exact check behind
render verification (translator.renders.verify). Pure: rendered objects in, problems out.

The engine converting each object of the render before the conversion gives what the cluster should
receive; the render of the converted tree must be that, object for object and field for field, with
every ResourceClaimTemplate those objects need, in their namespace. A device count is not enough:
an overlay's patch list replacing the base's (tolerations, a container's claims), a claim left on the
pod after a patch deleted its container, a template in the wrong namespace or an overlay's `nodeName`
all keep each container's count and still change what the pod gets.

Lists whose order means nothing to Kubernetes and that kustomize's merges reorder (pod claims, a
container's claims, tolerations) are compared as sets. Templates the converted tree renders beyond
those needed are allowed: a base's templates stay in an overlay's render after it patched the count.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dra_migrate.engine import Config, convert, same

TEMPLATE_KIND = "ResourceClaimTemplate"
UNORDERED = frozenset({"resourceClaims", "claims", "tolerations"})
DIFFERENCES_PER_OBJECT = 3
SHOWN_CHARACTERS = 160

ObjectKey = tuple[str, str, str, str]  # API group, kind, namespace, name


def conversion_differences(before: Iterable[Any], after: Iterable[Any], config: Config) -> list[str]:
    """How `after` (the render of the converted tree) differs from converting `before` (the render of
    the tree as it was): one line per difference, naming the object and the field."""
    expected, needed = _expected(before, config)
    rendered = _by_key(o for o in after if isinstance(o, dict))
    problems: list[str] = []
    for key in sorted(set(expected) | {k for k, o in rendered.items() if o.get("kind") != TEMPLATE_KIND}):
        want, have = expected.get(key), rendered.get(key)
        if have is None:
            problems.append(f"{_describe(key)}: missing from the render after the conversion")
        elif want is None:
            problems.append(f"{_describe(key)}: rendered after the conversion only")
        else:
            problems.extend(f"{_describe(key)}: {line}" for line in _differences(want, have))
    for key in sorted(needed):
        problems.extend(_template_problems(key, needed[key], rendered))
    return problems


def _expected(before: Iterable[Any], config: Config) -> tuple[dict[ObjectKey, Any], dict[ObjectKey, Any]]:
    """The engine's conversion of each rendered object (templates apart), and the templates they need."""
    objects: dict[ObjectKey, Any] = {}
    templates: dict[ObjectKey, Any] = {}
    for obj in before:
        if not isinstance(obj, dict):
            continue
        result = convert(obj, config)
        if result.object is not None:
            target = templates if result.object.get("kind") == TEMPLATE_KIND else objects
            target[_key(result.object)] = result.object
        for template in result.templates:
            templates[_key(template)] = template
    return objects, templates


def _template_problems(key: ObjectKey, want: Mapping[str, Any], rendered: Mapping[ObjectKey, Any]) -> list[str]:
    have = rendered.get(key)
    if have is None:
        _, kind, _, name = key
        elsewhere = sorted(_describe(k) for k in rendered if k[1] == kind and k[3] == name)
        found = f" (the render holds {', '.join(elsewhere)})" if elsewhere else ""
        return [f"{_describe(key)}: needed, missing from the render after the conversion{found}"]
    return [
        f"{_describe(key)}: {line}"
        for line in _differences({"apiVersion": want.get("apiVersion"), "spec": want.get("spec")}, have, partial=True)
    ]


def _differences(want: Any, have: Any, partial: bool = False) -> list[str]:
    """Up to DIFFERENCES_PER_OBJECT fields that differ (`partial`: only the keys `want` has)."""
    found = []
    for path, expected, rendered in _walk(want, have, (), partial):
        where = ".".join(str(p) for p in path) or "the object"
        found.append(f"{where} renders as {_show(rendered)}; converting the render gives {_show(expected)}")
        if len(found) == DIFFERENCES_PER_OBJECT:
            break
    return found


_ABSENT = object()


def _walk(want: Any, have: Any, path: tuple[Any, ...], partial: bool = False) -> Iterator[tuple[Any, ...]]:
    if isinstance(want, dict) and isinstance(have, dict):
        keys = list(want) if partial else [*want, *(k for k in have if k not in want)]
        for k in keys:
            yield from _walk(want.get(k, _ABSENT), have.get(k, _ABSENT), (*path, k))
    elif isinstance(want, list) and isinstance(have, list):
        if path and path[-1] in UNORDERED:
            want, have = _canonical(want), _canonical(have)
        if len(want) != len(have):
            yield path, want, have
        else:
            for i, (w, h) in enumerate(zip(want, have, strict=True)):
                yield from _walk(w, h, (*path, i))
    elif want is _ABSENT or have is _ABSENT:
        if want is not have:
            yield path, want, have
    elif not same(want, have):
        yield path, want, have


def _canonical(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    text = json.dumps(value, sort_keys=False, default=str)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 3] + "..."


def _by_key(objects: Iterable[dict[str, Any]]) -> dict[ObjectKey, dict[str, Any]]:
    return {_key(o): o for o in objects}


def _key(obj: Mapping[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return group, str(obj.get("kind") or ""), str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _describe(key: ObjectKey) -> str:
    _, kind, namespace, name = key
    return f"{kind} {namespace + '/' if namespace else ''}{name}"
