"""The configuration file's sections that parts own, registered by each part when it is imported.

`dra_migrate.CONFIG_SECTION_MODULES` names the parts' section modules; they are imported when the
first file is read (not on every start: a command without a configuration file needs none), and
configfile.py validates and parses what they registered. Standard library only, and no
dataclasses: this module is on every command's start-up path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

Parsed = TypeVar("Parsed")


class Section(NamedTuple, Generic[Parsed]):
    """One top-level section of the file that a part owns."""

    key: str
    schema: Mapping[str, Any]  # JSON Schema, checked with the rest of the file
    parse: Callable[[Mapping[str, Any] | None], Parsed]  # the validated section (None: absent)


_SECTIONS: dict[str, Section[Any]] = {}


def register_section(section: Section[Any]) -> None:
    """Called by a part when it is imported; registering the same key twice is a mistake."""
    known = _SECTIONS.setdefault(section.key, section)
    if known is not section:
        raise ValueError(f"configuration section {section.key!r} is registered twice")


def registered_sections() -> tuple[Section[Any], ...]:
    """Every part's section (their modules imported on the first call)."""
    import dra_migrate

    for name in dra_migrate.CONFIG_SECTION_MODULES:
        importlib.import_module(name)
    return tuple(_SECTIONS.values())
