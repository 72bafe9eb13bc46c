"""The configuration file's sections that parts own, registered by each part when it is imported.

Standard library only: the parts' section modules import this at package import time
(`dra_migrate/__init__.py`), and configfile.py validates and parses what is registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Parsed = TypeVar("Parsed")


@dataclass(frozen=True, eq=False)
class Section(Generic[Parsed]):
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
    return tuple(_SECTIONS.values())
