"""The engine's output for one input object.

Plain classes rather than dataclasses: the translator imports them on every start, where creating
a dataclass (its methods compiled from generated source) would cost about a millisecond each.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.changes import Change, changes
from dra_migrate.engine.findings import Finding
from dra_migrate.engine.mapping import DeviceRequestSpec
from dra_migrate.engine.severity import Severity


class Conversion:
    """One container's device-plugin request that became claims: what the webhook reports and checks
    (quota, served names) without walking the pod again."""

    __slots__ = ("claims", "container", "count", "device_class_name", "path", "resource")

    def __init__(
        self, path: str, container: str, resource: str, count: int, device_class_name: str, claims: tuple[str, ...]
    ) -> None:
        self.path = path  # JSON path of the container's `resources`
        self.container = container
        self.resource = resource  # the device-plugin name, e.g. nvidia.com/gpu
        self.count = count
        self.device_class_name = device_class_name
        self.claims = claims  # the pod claim names the container now uses

    def under(self, prefix: str) -> Conversion:
        """The same conversion, its path inside `prefix` (an item of a List)."""
        path = f"{prefix}.{self.path}" if self.path else prefix
        return Conversion(path, self.container, self.resource, self.count, self.device_class_name, self.claims)


class ConversionResult:
    """`object` is the converted object (the input itself when nothing changed; None when dropped).

    `extended` lists the mapped names left as extended resources for the scheduler (KEP-5004).
    `templates` are the ResourceClaimTemplates the object needs, in the target's API version, in the
    object's namespace (none set for a namespace-less object). `findings` covers every change made
    (severity info) and every problem found (warning, error); an error means that part was left as is.
    `conversions` lists each device-plugin request that became claims, in the order converted.
    `changes` is the change set from the input (`source`) to `object` (engine/changes.py).
    """

    __slots__ = ("_changes", "changed", "conversions", "extended", "findings", "object", "source", "templates")

    def __init__(
        self,
        object: dict[str, Any] | None,
        changed: bool,
        templates: list[dict[str, Any]] | None = None,
        findings: list[Finding] | None = None,
        extended: list[DeviceRequestSpec] | None = None,
        conversions: list[Conversion] | None = None,
    ) -> None:
        self.object = object
        self.changed = changed
        self.templates = [] if templates is None else templates
        self.findings = [] if findings is None else findings
        # Device-plugin names the migration strategy left to KEP-5004, with their mapping (the
        # DeviceClasses that must map them: build_device_class).
        self.extended = [] if extended is None else extended
        self.conversions = [] if conversions is None else conversions
        self.source: Any = None  # the object given to convert(), set by it
        self._changes: list[Change] | None = None

    @property
    def changes(self) -> list[Change]:
        """What turns `source` into `object` (found on first use); none when unchanged or dropped."""
        if self._changes is None:
            converted = self.changed and self.object is not None and self.source is not None
            self._changes = changes(self.source, self.object) if converted else []
        return self._changes

    @property
    def converted_resources(self) -> list[str]:
        """The device-plugin names converted, sorted, each once."""
        return sorted({c.resource for c in self.conversions})

    @property
    def dropped(self) -> bool:
        return self.object is None

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is not Severity.INFO]
