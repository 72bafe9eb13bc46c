"""ResourceClaimTemplates seen and emitted during one run, so each is written once per namespace."""

from __future__ import annotations

from typing import Any

TemplateKey = tuple[str | None, str]


def template_key(template: dict[str, Any]) -> TemplateKey:
    metadata = template.get("metadata") or {}
    return metadata.get("namespace") or None, str(metadata.get("name", ""))


class TemplateRegistry:
    """Also remembers DeviceClasses in the inputs that map a resource name themselves (KEP-5004)."""

    def __init__(self) -> None:
        self._known: set[TemplateKey] = set()
        self.device_classes: list[dict[str, Any]] = []

    def copy(self) -> TemplateRegistry:
        other = TemplateRegistry()
        other._known = set(self._known)
        other.device_classes = list(self.device_classes)
        return other

    def note_device_class(self, device_class: dict[str, Any]) -> None:
        spec = device_class.get("spec")
        if isinstance(spec, dict) and spec.get("extendedResourceName"):
            self.device_classes.append(device_class)

    def note_existing(self, template: dict[str, Any]) -> None:
        """A template already in the inputs (for example from an earlier run) is not written again."""
        self._known.add(template_key(template))

    def is_new(self, template: dict[str, Any]) -> bool:
        """Not seen yet (claim() decides who writes it)."""
        return template_key(template) not in self._known

    def claim(self, template: dict[str, Any]) -> bool:
        """True the first time a template is seen: the caller writes it."""
        key = template_key(template)
        if key in self._known:
            return False
        self._known.add(key)
        return True
