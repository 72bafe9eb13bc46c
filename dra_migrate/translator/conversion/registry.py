"""ResourceClaimTemplates seen and emitted within one output unit, so each is written once there."""

from __future__ import annotations

import enum
from typing import Any

from dra_migrate.engine import Finding, Severity, spec_matches

TemplateKey = tuple[str | None, str]


def template_key(template: dict[str, Any]) -> TemplateKey:
    """Its namespace and name; malformed metadata (not a mapping, a list for a name) still gives a key,
    since the engine reports the object's error where it converts it."""
    metadata = template.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    namespace = metadata.get("namespace")
    return (str(namespace) if namespace else None), str(metadata.get("name", ""))


def describe_key(key: TemplateKey) -> str:
    namespace, name = key
    return f"{namespace}/{name}" if namespace else name


class Claim(enum.Enum):
    NEW = "new"  # the caller writes it
    KNOWN = "known"  # already there with the same spec
    CONFLICT = "conflict"  # there under the same name with another spec: never overwritten


def template_conflict(template: dict[str, Any]) -> Finding:
    """The error for a generated template whose name is taken by another spec in the same unit."""
    return Finding(
        Severity.ERROR,
        "template-conflict",
        "",
        f"ResourceClaimTemplate {describe_key(template_key(template))} already exists in the output with another "
        "spec (edited by hand?); it is left as is, so the converted workload would get other devices than it asked for",
    )


def same_template(existing: dict[str, Any], generated: dict[str, Any]) -> bool:
    """Same devices asked for; templates of different API versions are not compared (same name, same hash)."""
    if existing.get("apiVersion") != generated.get("apiVersion"):
        return True
    return spec_matches(existing, generated)


class TemplateRegistry:
    """Also remembers DeviceClasses in the inputs that map a resource name themselves (KEP-5004)."""

    def __init__(self) -> None:
        self._known: dict[TemplateKey, dict[str, Any]] = {}
        self.device_classes: list[dict[str, Any]] = []

    def copy(self) -> TemplateRegistry:
        other = TemplateRegistry()
        other._known = dict(self._known)
        other.device_classes = list(self.device_classes)
        return other

    def note_device_class(self, device_class: dict[str, Any]) -> None:
        spec = device_class.get("spec")
        if isinstance(spec, dict) and spec.get("extendedResourceName"):
            self.device_classes.append(device_class)

    def note_existing(self, template: dict[str, Any]) -> None:
        """A template already in the unit (for example from an earlier run) is not written again."""
        self._known.setdefault(template_key(template), template)

    def knows(self, key: TemplateKey) -> bool:
        return key in self._known

    def claim(self, template: dict[str, Any]) -> Claim:
        key = template_key(template)
        existing = self._known.get(key)
        if existing is None:
            self._known[key] = template
            return Claim.NEW
        return Claim.KNOWN if same_template(existing, template) else Claim.CONFLICT

    def child(self) -> TemplateRegistry:
        """A registry for a smaller unit inside this one: same DeviceClasses, no templates yet."""
        registry = TemplateRegistry()
        registry.device_classes = self.device_classes
        return registry
