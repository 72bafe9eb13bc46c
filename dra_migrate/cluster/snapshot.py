"""A cluster snapshot directory: `kubectl get -o yaml` (or JSON) output, any file names, read the same
way as a live cluster. `version.yaml` (`kubectl version -o yaml`) gives the server's version and
`api-versions.txt` (`kubectl api-versions`) the served API versions; both are optional."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dra_migrate.cluster.shapes import shape_problem
from dra_migrate.cluster.state import KIND_NAMES, KINDS, ClusterState
from dra_migrate.engine import DEFAULT_TARGET, Target, TargetVersionError
from dra_migrate.manifests.yamltext import kubeyaml

VERSION_FILE = "version.yaml"
API_VERSIONS_FILE = "api-versions.txt"
_SUFFIXES = (".yaml", ".yml", ".json")


class SnapshotError(Exception):
    """A snapshot that cannot be read, with the file and the reason."""


def read_snapshot(directory: Path) -> ClusterState:
    if not directory.exists():
        raise SnapshotError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise SnapshotError(f"{directory}: not a directory (a snapshot is a directory of YAML or JSON files)")
    state = ClusterState(source=str(directory))
    read: list[tuple[Path, int, dict[str, Any]]] = []  # checked once the server's version is known
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        if path.name == API_VERSIONS_FILE:
            state.api_versions |= {line.strip() for line in _text(path).splitlines() if line.strip()}
        elif path.suffix in _SUFFIXES:
            for number, document in enumerate(_documents(path), 1):
                if isinstance(document, dict) and isinstance(document.get("serverVersion"), dict):
                    state.server_version = str(document["serverVersion"].get("gitVersion") or "") or None
                elif isinstance(document, dict):
                    read.extend((path, number, obj) for obj in _objects(path, number, document))
    if not read and state.server_version is None:
        # an empty or mistaken directory would give a confident plan of an empty cluster
        raise SnapshotError(
            f"{directory}: no Node, Pod, workload or other object the plan reads, and no version.yaml "
            "(a snapshot is `kubectl get -o yaml` output, or what plan --snapshot wrote)"
        )
    _check_shapes(read, state)
    state.add(obj for _, _, obj in read)
    return state


def _objects(path: Path, number: int, document: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a document the plan reads (a List's items)."""
    if isinstance(document.get("kind"), str) and document["kind"].endswith("List"):
        listed = document.get("items") or []
        if not isinstance(listed, list):
            raise SnapshotError(f"{path}: document {number}: items: not a list")
    else:
        listed = [document]
    kept = []
    for obj in (o for o in listed if isinstance(o, dict)):
        if not isinstance(obj.get("kind", ""), str):
            raise SnapshotError(f"{path}: document {number}: kind: {obj['kind']!r} is not a string")
        if obj.get("kind") in KIND_NAMES:
            kept.append(obj)
    return kept


def _check_shapes(read: list[tuple[Path, int, dict[str, Any]]], state: ClusterState) -> None:
    minor = state.minor_release
    try:
        target = Target.parse(minor) if minor else Target.parse(DEFAULT_TARGET)
    except TargetVersionError:
        target = Target.parse(DEFAULT_TARGET)
    for path, number, obj in read:
        problem = shape_problem(obj, target)
        if problem is not None:
            metadata = obj.get("metadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            namespace = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
            what = f"{obj.get('kind')} {namespace}{metadata.get('name') or '(no name)'}"
            raise SnapshotError(f"{path}: document {number}: {what}: {problem}")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _documents(path: Path) -> list[Any]:
    try:
        return kubeyaml.load_all(_text(path))
    except (ValueError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SnapshotError(f"{path}: not YAML or JSON{where}: {problem}") from None


def write_snapshot(state: ClusterState, directory: Path) -> list[Path]:
    """One List file per kind, the version and the API versions; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if state.server_version:
        path = directory / VERSION_FILE
        path.write_text(yaml.safe_dump({"serverVersion": {"gitVersion": state.server_version}}), encoding="utf-8")
        written.append(path)
    if state.api_versions:
        path = directory / API_VERSIONS_FILE
        path.write_text("".join(f"{v}\n" for v in sorted(state.api_versions)), encoding="utf-8")
        written.append(path)
    resources = {kind: resource for kind, _, resource, _ in KINDS} | {"ConfigMap": "configmaps"}
    for kind, objects in sorted(state.objects.items()):
        path = directory / f"{resources.get(kind, kind.lower())}.yaml"
        document = {"apiVersion": "v1", "kind": "List", "items": objects}
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        written.append(path)
    return written
