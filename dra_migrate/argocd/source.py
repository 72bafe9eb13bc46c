"""The application's source directory: what kind of source it is, and how it is rendered.

A directory with a kustomization is built with kustomize; else one with a Chart.yaml is a Helm
chart, rendered with `helm template` as Argo CD renders charts (release = application name,
destination namespace, CRDs included, the cluster's version and API versions); else its manifests
are read as they are. Files the Application names (values files, the configuration) must be files
of its repository: the sidecar holds that repository alone, and a path must not reach out of it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml

from dra_migrate.argocd.environment import Application, PluginError

SourceKind = Literal["kustomize", "helm", "directory"]
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def source_kind(app_dir: Path) -> SourceKind:
    if any((app_dir / name).is_file() for name in KUSTOMIZATION_NAMES):
        return "kustomize"
    if (app_dir / "Chart.yaml").is_file():
        return "helm"
    return "directory"


def repository_root(app_dir: Path, source_path: str) -> Path:
    """The checkout the sidecar received: the application directory less ARGOCD_APP_SOURCE_PATH."""
    parts = [p for p in PurePosixPath(source_path).parts if p not in (".", "/")]
    if parts and app_dir.parts[-len(parts) :] == tuple(parts):
        return Path(*app_dir.parts[: -len(parts)])
    return app_dir  # unknown or not a suffix: the application directory is all that is trusted


def repository_file(app: Application, app_dir: Path, relative: str, what: str) -> Path:
    """`relative` (to the application directory) as a file inside the application's repository."""
    if "://" in relative:
        raise PluginError(f"{what} {relative!r}: only files of the application's repository are read, not URLs")
    root = repository_root(app_dir, app.source_path).resolve()
    path = (app_dir / relative).resolve()
    if not path.is_relative_to(root):
        raise PluginError(f"{what} {relative!r} is outside the application's repository")
    if not path.is_file():
        raise PluginError(f"{what} {relative!r}: no such file in the application's repository")
    return path


def helm_template_command(helm: str, app: Application, app_dir: Path) -> list[str]:
    release = app.settings.release_name or app.name
    if not release:
        raise PluginError("a Helm chart needs a release name: ARGOCD_APP_NAME is empty and release-name is not set")
    command = [helm, "template", release, ".", "--include-crds"]
    if app.namespace:
        command += ["--namespace", app.namespace]
    if app.kube_version:
        command += ["--kube-version", app.kube_version]
    for api_version in app.api_versions:
        command += ["--api-versions", api_version]
    for values in app.settings.values_files:
        command += ["--values", str(repository_file(app, app_dir, values, "values file"))]
    return command


def missing_dependencies(app_dir: Path) -> list[str]:
    """Dependencies in Chart.yaml with neither a directory nor an archive under charts/."""
    try:
        chart: Any = yaml.safe_load((app_dir / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PluginError(f"Chart.yaml cannot be read: {' '.join(str(exc).split())}") from exc
    dependencies = chart.get("dependencies") if isinstance(chart, dict) else None
    if not isinstance(dependencies, list):
        return []
    charts = app_dir / "charts"
    missing = []
    for index, dependency in enumerate(dependencies):
        name = dependency.get("name") if isinstance(dependency, dict) else None
        if not isinstance(name, str) or not name:
            raise PluginError(f"Chart.yaml: dependencies[{index}] has no name")
        if not (charts / name / "Chart.yaml").is_file() and not any(charts.glob(f"{name}-*.tgz")):
            missing.append(name)
    return missing


def manifest_files(app_dir: Path) -> list[str]:
    """The manifests at the top of a plain directory (Argo CD's directory source does not recurse by default)."""
    return sorted(p.name for p in app_dir.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES)


def has_objects(render: str) -> bool:
    """Whether a YAML stream holds anything beyond separators and comments."""
    for line in render.splitlines():
        text = line.strip()
        if text and not text.startswith("#") and text not in ("---", "..."):
            return True
    return False
