"""Helm charts among the inputs: their templates cannot be converted as files (what they render
depends on values), so the run points at the post-renderer instead of skipping them quietly."""

from __future__ import annotations

import re
from pathlib import Path

from dra_migrate.engine import Config, DeviceRequestSpec

POST_RENDERER = "helm install|upgrade|template --post-renderer dra-migrate (deploy/helm-postrenderer)"
_RESOURCE_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.[a-z]{2,}/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


def requested_devices(text: str, config: Config) -> list[str]:
    """Resource names in `text` that the mapping converts (`nvidia.com/gpu`, a MIG profile's name)."""
    names = {m.group(0) for m in _RESOURCE_NAME.finditer(text)}
    return sorted(n for n in names if isinstance(config.mappings.resolve(n), DeviceRequestSpec))


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
