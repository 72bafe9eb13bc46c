"""Target Kubernetes releases and the `resource.k8s.io` versions they serve (dra-api.md section 1)."""

from __future__ import annotations

import re
from dataclasses import dataclass

RESOURCE_GROUP = "resource.k8s.io"
OLDEST_TARGET = (1, 32)
DEFAULT_TARGET = "1.34"

# Core DRA kinds; DeviceTaintRule follows its own table below.
CORE_KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})


# First minor release whose default turns each gate on (dra-api.md 1.4).
_GATES_ON_FROM = {
    "DynamicResourceAllocation": 34,
    "DRAAdminAccess": 34,
    "DRAPrioritizedList": 34,
    "DRAExtendedResource": 36,
    "DRADeviceTaints": 36,
    "DRADeviceTaintRules": 37,
    "DRAConsumableCapacity": 36,
    "DRAPartitionableDevices": 36,
    "DRADeviceBindingConditions": 36,
}


class TargetVersionError(ValueError):
    pass


@dataclass(frozen=True, order=True, slots=True)
class Target:
    """A Kubernetes minor release that converted manifests must be valid for."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Target:
        match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", text.strip())
        if not match:
            raise TargetVersionError(f"target version {text!r} is not of the form 1.34 or v1.34.2")
        target = cls(int(match.group(1)), int(match.group(2)))
        if (target.major, target.minor) < OLDEST_TARGET:
            raise TargetVersionError(
                f"target version {target} is not supported: DRA with structured parameters "
                "(resource.k8s.io/v1beta1) starts with Kubernetes 1.32"
            )
        return target

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, minor: int) -> bool:
        return (self.major, self.minor) >= (1, minor)

    @property
    def dra_version(self) -> str:
        """The version the translator writes: 1.32 -> v1beta1, 1.33 -> v1beta2, 1.34+ -> v1."""
        if self.at_least(34):
            return "v1"
        if self.at_least(33):
            return "v1beta2"
        return "v1beta1"

    @property
    def dra_api_version(self) -> str:
        return f"{RESOURCE_GROUP}/{self.dra_version}"

    @property
    def schema_version(self) -> str:
        """The kubernetes-validate schema release for this target."""
        return f"{self.major}.{self.minor}.0"

    def feature_enabled(self, gate: str) -> bool:
        """Whether feature gate `gate` is on by default in this release."""
        first_on = _GATES_ON_FROM.get(gate)
        return first_on is not None and self.at_least(first_on)

    def serves_device_taint_rule(self, version: str) -> bool:
        # v1alpha3 from 1.33; v1beta2 from 1.36; v1 only after 1.36 (dra-api.md 1.1).
        if version == "v1alpha3":
            return self.at_least(33)
        if version == "v1beta2":
            return self.at_least(36)
        if version == "v1":
            return self.at_least(37)
        return False
