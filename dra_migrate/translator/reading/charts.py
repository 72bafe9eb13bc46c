"""Helm charts among the inputs: their templates cannot be converted as files (what they render
depends on values), so the run points at the post-renderer instead of skipping them quietly.

A chart requests a device where a template or a values file names it as a request: a toleration's
`key: nvidia.com/gpu` (the taint GPU nodes carry), a node selector or affinity on a resource-named
label, and comments are no request."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from dra_migrate.engine import Config, DeviceRequestSpec

POST_RENDERER = "helm install|upgrade|template --post-renderer dra-migrate (deploy/helm-postrenderer)"
_RESOURCE_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.[a-z]{2,}/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
# subtrees and keys under which a resource name is no request (as the engine's unknown-kind walk)
_NOT_REQUESTS = frozenset({"tolerations", "taints", "nodeSelector", "affinity", "nodeAffinity"})
_HELM_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)
_YAML_COMMENT = re.compile(r"(^|\s)#.*$", re.MULTILINE)
_TOLERATION_KEY = re.compile(r"""(^|[\s{,-])key:\s*["']?[^\s"',}]+""", re.MULTILINE)
_SKIPPED_DIRECTORIES = frozenset({"charts", ".git"})  # subcharts are charts of their own


def requested_devices(text: str, config: Config) -> list[str]:
    """Resource names in `text` that the mapping converts (`nvidia.com/gpu`, a MIG profile's name)."""
    names = {m.group(0) for m in _RESOURCE_NAME.finditer(text)}
    return sorted(n for n in names if _mapped(n, config))


def _mapped(name: str, config: Config) -> bool:
    return isinstance(config.mappings.resolve(name), DeviceRequestSpec)


def template_requests(text: str, config: Config) -> list[str]:
    """Mapped names a template requests: outside comments, and not as a toleration's `key:`."""
    text = _YAML_COMMENT.sub(r"\1", _HELM_COMMENT.sub("", text))
    return requested_devices(_TOLERATION_KEY.sub(r"\1", text), config)


def values_requests(text: str, config: Config) -> list[str]:
    """Mapped names a values file requests: as keys or values outside tolerations, node selection and
    comments; a values file YAML cannot read is read as a template's text."""
    try:
        documents = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return template_requests(text, config)
    return sorted({name for document in documents for name in _walk(document) if _mapped(name, config)})


def _walk(node: Any) -> Iterator[str]:
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _NOT_REQUESTS:
                    continue
                if isinstance(key, str):
                    yield key
                if key != "key":
                    pending.append(value)
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            yield item


def chart_requests(root: Path, config: Config) -> dict[str, list[str]]:
    """Each mapped name the chart requests -> the files (relative to the chart) that name it."""
    found: dict[str, list[str]] = {}
    for path in _chart_files(root, root):
        relative = path.relative_to(root)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue
        in_templates = relative.parts[0] == "templates"
        if not in_templates and path.suffix not in (".yaml", ".yml"):
            continue
        names = template_requests(text, config) if in_templates else values_requests(text, config)
        for name in names:
            found.setdefault(name, []).append(relative.as_posix())
    return found


def _chart_files(directory: Path, root: Path) -> Iterator[Path]:
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        if entry.is_dir():
            if entry.name not in _SKIPPED_DIRECTORIES:
                yield from _chart_files(entry, root)
        elif entry.is_file():
            yield entry


def chart_template(path: Path, stop: Path | None) -> Path | None:
    """The chart whose `templates/` (or a subchart's) holds the file: Helm renders it, so it is no
    manifest even where it happens to parse as YAML."""
    root = chart_root(path, stop)
    return root if root is not None and path.relative_to(root).parts[0] == "templates" else None


def chart_root(path: Path, stop: Path | None) -> Path | None:
    """The nearest directory holding a Chart.yaml, from the file's directory up to `stop` (inclusive)."""
    directory = path.parent
    while True:
        if (directory / "Chart.yaml").is_file():
            return directory
        if stop is None or directory == stop or directory.parent == directory:
            return None
        directory = directory.parent


def chart_message(root: Path, shown: str, config: Config) -> str | None:
    """The helm-chart warning for a chart, naming what each of its files requests; None when none does."""
    requests = chart_requests(root, config)
    if not requests:
        return None
    named = "; ".join(f"{name} ({', '.join(files)})" for name, files in sorted(requests.items()))
    return (
        f"the Helm chart {shown} requests {named}: what it installs depends on its values, so convert its "
        f"rendered manifests with {POST_RENDERER}"
    )
