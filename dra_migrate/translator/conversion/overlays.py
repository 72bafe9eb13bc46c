"""Strategic-merge patches of a converted base, made to render what the conversion means.

kustomize's built-in schema does not know a pod's `resourceClaims` as a list merged by name, so the
list in a patch replaces the base's: an overlay that changes one container's GPU count would leave
the base's other containers referencing claims their pod no longer declares. A converted patch that
declares claims therefore carries the base's other claims too, and the rendered pod declares every
claim its containers use (translator.renders.verify checks the render).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from dra_migrate.engine import Config
from dra_migrate.manifests.yamltext import edit_document, kubeyaml, split_stream

PathKey = tuple[Any, ...]


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    metadata = obj.get("metadata") or {}
    return str(obj.get("kind")), str(metadata.get("name")), str(metadata.get("namespace") or "")


def _claims_by_path(obj: dict[str, Any], config: Config) -> dict[PathKey, list[Any]]:
    out: dict[PathKey, list[Any]] = {}
    for path, spec in config.workloads.pod_specs(obj):
        claims = spec.get("resourceClaims")
        if isinstance(claims, list):
            out[tuple(path)] = claims
    return out


BaseClaims = dict[tuple[str, str, str], dict[PathKey, list[Any]]]


def base_claims(texts: Iterable[str], config: Config) -> BaseClaims:
    """Each base object's pod `resourceClaims` lists, by object and pod spec path."""
    objects: list[Any] = []
    for text in texts:
        try:
            objects.extend(kubeyaml.load_all(text))
        except (ValueError, yaml.YAMLError):  # an unreadable base file has its own error in the run
            continue
    return claims_of(objects, config)


def claims_of(objects: Iterable[Any], config: Config) -> BaseClaims:
    found: BaseClaims = {}
    for obj in objects:
        if isinstance(obj, dict):
            claims = _claims_by_path(obj, config)
            if claims:
                found[_identity(obj)] = claims
    return found


def _target(patch: Mapping[str, Any], bases: BaseClaims) -> dict[PathKey, list[Any]] | None:
    kind, name, namespace = _identity(patch)
    exact = bases.get((kind, name, namespace))
    if exact is not None or namespace:
        return exact
    # a patch without a namespace matches the object of that kind and name in any namespace
    matches = [claims for (k, n, _), claims in bases.items() if (k, n) == (kind, name)]
    return matches[0] if len(matches) == 1 else None


def complete_patch(text: str, bases: BaseClaims, config: Config) -> str:
    """`text` (a converted patch file) with the base's other claims added to each `resourceClaims` list."""
    stream = split_stream(text)
    parts: list[str] = []
    for document in stream.documents:
        parts.append(document.text)
        obj = document.obj
        if not isinstance(obj, dict):
            continue
        target = _target(obj, bases)
        if target is None:
            continue
        new = copy.deepcopy(obj)
        changed = False
        for path, spec in config.workloads.pod_specs(new):
            claims = spec.get("resourceClaims")
            if not isinstance(claims, list) or tuple(path) not in target:
                continue
            names = {c.get("name") for c in claims if isinstance(c, dict)}
            missing = [c for c in target[tuple(path)] if isinstance(c, dict) and c.get("name") not in names]
            if missing:
                claims.extend(copy.deepcopy(missing))
                changed = True
        if changed:
            parts[-1] = edit_document(document.text, obj, new).text
    return stream.join(parts)
