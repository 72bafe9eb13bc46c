"""Read the server's configuration file: the translator's mapping format plus the `webhook` policy."""

from __future__ import annotations

from pathlib import Path

import yaml

from translator.engine import Config, ConfigError, default_config, parse_config


def load_config(path: Path | None) -> Config:
    """The validated Config; without a file the built-in mappings and default policy apply.

    Raises ConfigError naming the file and, for schema errors, the field.
    """
    if path is None:
        return default_config()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
