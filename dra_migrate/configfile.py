"""Reading the configuration file: one file serves the translator and the webhook.

It sits above both edges: the engine interprets its sections, the webhook its `webhook:`
section, and every section is validated whichever command reads the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from dra_migrate.engine import Config, ConfigError, parse_config

if TYPE_CHECKING:
    from dra_migrate.webhook.policy import WebhookPolicy


class Settings(NamedTuple):
    config: Config
    webhook: WebhookPolicy
    # The target release was given (file or command line), not defaulted: the webhook then does
    # not take it from the cluster's version.
    target_given: bool = False


def invalid_yaml(exc: yaml.YAMLError, problem: str | None = None) -> str:
    """A YAML parse error as one line, with the line it was found on (`problem`: the parser's, reworded)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark else "unknown line"
    return f"invalid YAML at {where}: {problem or getattr(exc, 'problem', exc)}"


def parse_settings(data: Any, target: str | None = None) -> Settings:
    """Validate a parsed configuration document; raises ConfigError naming the field."""
    from dra_migrate.webhook.policy import WEBHOOK_SCHEMA, parse_webhook_policy  # not for load_config(None)

    config = parse_config(data, target, sections={"webhook": WEBHOOK_SCHEMA})
    given = target is not None or (isinstance(data, dict) and "targetVersion" in data)
    return Settings(config, parse_webhook_policy((data or {}).get("webhook")), given)


def load_settings(path: str | None, target: str | None = None) -> Settings:
    """Read, parse and validate; every problem becomes a ConfigError that names the file and field."""
    if path is None:
        return parse_settings({}, target)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {invalid_yaml(exc)}") from exc
    try:
        return parse_settings(data, target)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def load_config(path: str | None, target: str | None = None) -> Config:
    """The engine's part of the file (the translator needs no more)."""
    if path is None:  # no file: no section to validate, and the engine's defaults
        return parse_config({}, target)
    return load_settings(path, target).config
