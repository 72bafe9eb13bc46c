"""Reading the configuration file (the I/O edge of translator.engine.config)."""

from __future__ import annotations

from pathlib import Path

import yaml

from translator.engine import Config, ConfigError, parse_config


def load_config(path: str | None, target: str | None = None) -> Config:
    """Parse and validate; every problem becomes a ConfigError that names the file and field."""
    if path is None:
        return parse_config({}, target)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "unknown line"
        raise ConfigError(f"{path}: invalid YAML at {where}: {getattr(exc, 'problem', exc)}") from exc
    try:
        return parse_config(data, target)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
