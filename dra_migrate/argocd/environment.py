"""What the Argo CD repo-server hands a config management plugin, read into one Application.

The plugin's commands get the build environment (ARGOCD_APP_NAME, ARGOCD_APP_NAMESPACE,
ARGOCD_APP_SOURCE_PATH, KUBE_VERSION, KUBE_API_VERSIONS, ...), the Application's
`spec.source.plugin.env` entries prefixed with ARGOCD_ENV_, and its `spec.source.plugin.parameters`
as JSON in ARGOCD_APP_PARAMETERS (`[{"name": ..., "string"|"array"|"map": ...}]`, or `null`).

Each setting of this plugin can be given either way: as a parameter (`values-files`, shown in
Argo CD's UI) or as an env entry (`VALUES_FILES`, arrays comma-separated). A parameter wins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["string", "array", "boolean"]

# Every setting the plugin reads; plugin.yaml announces the same names to the UI.
SETTINGS: dict[str, Kind] = {
    "target-version": "string",
    "values-files": "array",
    "release-name": "string",
    "config": "string",
    "validate": "boolean",
    "recurse": "boolean",
}
ENV_PREFIX = "ARGOCD_ENV_"
PARAMETERS = "ARGOCD_APP_PARAMETERS"


class PluginError(ValueError):
    """What the plugin cannot do for this Application, said in one line (which setting, file or tool)."""


@dataclass(frozen=True)
class Settings:
    target_version: str | None = None
    values_files: tuple[str, ...] = ()
    release_name: str | None = None
    config: str | None = None
    validate: bool = False
    recurse: bool = False


@dataclass(frozen=True)
class Application:
    name: str
    namespace: str
    source_path: str  # of the application in its repository ("" or "." at the root)
    kube_version: str  # the destination cluster's, as Argo CD reports it ("" when unknown)
    api_versions: tuple[str, ...]
    settings: Settings


def env_entry(setting: str) -> str:
    """The Application's plugin env entry of a setting: `TARGET_VERSION` for `target-version`."""
    return setting.upper().replace("-", "_")


def env_name(setting: str) -> str:
    """The variable the plugin reads that entry from (Argo CD prefixes every entry with ARGOCD_ENV_)."""
    return ENV_PREFIX + env_entry(setting)


def read_application(environ: Mapping[str, str]) -> Application:
    values: dict[str, str | tuple[str, ...] | bool] = {}
    for setting, kind in SETTINGS.items():
        raw = environ.get(env_name(setting), "")
        if raw.strip():
            values[setting] = _from_env(setting, kind, raw)
    values.update(_parameters(environ.get(PARAMETERS, "")))
    settings = Settings(
        target_version=_string(values.get("target-version")),
        values_files=_array(values.get("values-files")),
        release_name=_string(values.get("release-name")),
        config=_string(values.get("config")),
        validate=values.get("validate") is True,
        recurse=values.get("recurse") is True,
    )
    return Application(
        name=environ.get("ARGOCD_APP_NAME", ""),
        namespace=environ.get("ARGOCD_APP_NAMESPACE", ""),
        source_path=environ.get("ARGOCD_APP_SOURCE_PATH", ""),
        kube_version=environ.get("KUBE_VERSION", "").strip(),
        api_versions=tuple(v for v in (p.strip() for p in environ.get("KUBE_API_VERSIONS", "").split(",")) if v),
        settings=settings,
    )


def cluster_minor(kube_version: str) -> str | None:
    """`1.34` of KUBE_VERSION `v1.34.2-eks-1a2b3c` (Argo CD passes the cluster's version less any `+`)."""
    found = re.match(r"v?(\d+)\.(\d+)", kube_version)
    return f"{found.group(1)}.{found.group(2)}" if found else None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _array(value: object) -> tuple[str, ...]:
    return value if isinstance(value, tuple) else ()


def _boolean(text: str, where: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise PluginError(f"{where} is {text!r}: it takes true or false")


def _from_env(setting: str, kind: Kind, raw: str) -> str | tuple[str, ...] | bool:
    where = f"plugin env {env_entry(setting)}"
    if kind == "boolean":
        return _boolean(raw, where)
    if kind == "array":
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    return raw.strip()


def _parameters(text: str) -> dict[str, str | tuple[str, ...] | bool]:
    """The settings among ARGOCD_APP_PARAMETERS; an unknown name or a value of the wrong form is an error."""
    if not text.strip():
        return {}
    try:
        entries: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PluginError(f"{PARAMETERS} is not JSON: {exc}") from exc
    if entries is None:  # Argo CD sends null when the Application sets no parameters
        return {}
    if not isinstance(entries, list):
        raise PluginError(f"{PARAMETERS} is not a list of parameters")
    values: dict[str, str | tuple[str, ...] | bool] = {}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise PluginError(f"{PARAMETERS}: a parameter without a name: {json.dumps(entry)}")
        kind = SETTINGS.get(name)
        if kind is None:
            raise PluginError(f"parameter {name!r} is not one of this plugin's ({', '.join(SETTINGS)})")
        values[name] = _parameter_value(name, kind, entry)
    return values


def _parameter_value(name: str, kind: Kind, entry: dict[str, Any]) -> str | tuple[str, ...] | bool:
    where = f"parameter {name!r}"
    if kind == "array":
        items = entry.get("array")
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise PluginError(f"{where} takes an array of strings (array: [...])")
        return tuple(i.strip() for i in items if i.strip())
    value = entry.get("string")
    if not isinstance(value, str):
        raise PluginError(f"{where} takes a string (string: ...)")
    return _boolean(value, where) if kind == "boolean" else value.strip()
