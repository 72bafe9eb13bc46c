"""ResourceClaimTemplates seen and emitted during one run, so each is written once per namespace."""

from __future__ import annotations

from typing import Any

TemplateKey = tuple[str | None, str]


def template_key(template: dict[str, Any]) -> TemplateKey:
    metadata = template.get("metadata") or {}
    return metadata.get("namespace") or None, str(metadata.get("name", ""))


class TemplateRegistry:
    """Also remembers DeviceClasses in the inputs that serve a resource name themselves (KEP-5004)."""

    def __init__(self) -> None:
        self._known: set[TemplateKey] = set()
        self.served_names: dict[str, str] = {}  # extendedResourceName -> DeviceClass name

    def note_device_class(self, device_class: dict[str, Any]) -> None:
        spec = device_class.get("spec")
        resource = spec.get("extendedResourceName") if isinstance(spec, dict) else None
        if isinstance(resource, str) and resource:
            self.served_names[resource] = str((device_class.get("metadata") or {}).get("name", ""))

    def note_existing(self, template: dict[str, Any]) -> None:
        """A template already in the inputs (for example from an earlier run) is not written again."""
        self._known.add(template_key(template))

    def claim(self, template: dict[str, Any]) -> bool:
        """True the first time a template is seen: the caller writes it."""
        key = template_key(template)
        if key in self._known:
            return False
        self._known.add(key)
        return True
