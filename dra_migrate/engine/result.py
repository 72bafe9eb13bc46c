"""The engine's output for one input object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dra_migrate.engine.findings import Finding
from dra_migrate.engine.mapping import DeviceRequestSpec
from dra_migrate.engine.severity import Severity


@dataclass(frozen=True, slots=True)
class Conversion:
    """One container's device-plugin request that became claims: what the webhook reports and checks
    (quota, served names) without walking the pod again."""

    path: str  # JSON path of the container's `resources`
    container: str
    resource: str  # the device-plugin name, e.g. nvidia.com/gpu
    count: int
    device_class_name: str
    claims: tuple[str, ...]  # the pod claim names the container now uses


@dataclass(slots=True)
class ConversionResult:
    """`object` is the converted object (the input itself when nothing changed; None when dropped).

    `extended` lists the mapped names left as extended resources for the scheduler (KEP-5004).
    `templates` are the ResourceClaimTemplates the object needs, in the target's API version, in the
    object's namespace (none set for a namespace-less object). `findings` covers every change made
    (severity info) and every problem found (warning, error); an error means that part was left as is.
    `conversions` lists each device-plugin request that became claims, in the order converted.
    """

    object: dict[str, Any] | None
    changed: bool
    templates: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Device-plugin names the migration strategy left to KEP-5004, with their mapping (the
    # DeviceClasses that must map them: build_device_class).
    extended: list[DeviceRequestSpec] = field(default_factory=list)
    conversions: list[Conversion] = field(default_factory=list)

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
