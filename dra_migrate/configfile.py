"""Reading the configuration file: one file serves the translator and the webhook.

It sits above both edges and knows neither: the engine interprets the file's mapping sections,
and each other part registers its own top-level section (configsections.py: a key, a JSON
Schema and a parser) in a module that `dra_migrate.CONFIG_SECTION_MODULES` names and that is
imported when a file is read, so every section is validated whichever command reads the file (a
misspelt key is an error everywhere).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from dra_migrate.configsections import Parsed, Section, registered_sections
from dra_migrate.engine import Config, ConfigError, parse_config


class Settings(NamedTuple):
    config: Config
    sections: Mapping[str, Any]  # each registered section's parsed value, by key
    # The target release was given (file or command line), not defaulted: the webhook then does
    # not take it from the cluster's version.
    target_given: bool = False

    def get(self, section: Section[Parsed]) -> Parsed:
        value: Parsed = self.sections[section.key]
        return value


def invalid_yaml(exc: yaml.YAMLError, problem: str | None = None) -> str:
    """A YAML parse error as one line, with the line it was found on (`problem`: the parser's, reworded)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark else "unknown line"
    return f"invalid YAML at {where}: {problem or getattr(exc, 'problem', exc)}"


def parse_settings(data: Any, target: str | None = None) -> Settings:
    """Validate a parsed configuration document; raises ConfigError naming the field."""
    sections = registered_sections()
    config = parse_config(data, target, sections={section.key: section.schema for section in sections})
    given = target is not None or (isinstance(data, dict) and "targetVersion" in data)
    document = data if isinstance(data, dict) else {}
    parsed = {section.key: section.parse(document.get(section.key)) for section in sections}
    return Settings(config, parsed, given)


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
