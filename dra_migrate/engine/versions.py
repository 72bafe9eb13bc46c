"""Target Kubernetes releases; what each serves comes from the generated release table (engine.releases)."""

from __future__ import annotations

import re
from typing import NamedTuple

from dra_migrate.engine import releases

RESOURCE_GROUP = "resource.k8s.io"
DEFAULT_TARGET = "1.34"


class TargetVersionError(ValueError):
    pass


class Target(NamedTuple):
    """A Kubernetes minor release that converted manifests must be valid for (ordered by release)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Target:
        match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", text.strip())
        if not match:
            raise TargetVersionError(f"target version {text!r} is not of the form 1.34 or v1.34.2")
        target = cls(int(match.group(1)), int(match.group(2)))
        if target.major != 1:
            raise TargetVersionError(f"target version {target} is not a Kubernetes 1.x release")
        if target.minor < releases.OLDEST_MINOR:
            raise TargetVersionError(
                f"target version {target} is not supported: DRA with structured parameters "
                f"(resource.k8s.io/v1beta1) starts with Kubernetes 1.{releases.OLDEST_MINOR}"
            )
        return target

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def release(self) -> releases.Release:
        return releases.release(self.minor)

    @property
    def notice(self) -> str | None:
        """For a release newer than the table: what it is treated as (once per run, not per object)."""
        release = self.release
        if not release.projected:
            return None
        removed = sorted({f"{RESOURCE_GROUP}/{version}" for version, _ in release.withdrawn}, key=_version_order)
        without = f" without {', '.join(removed)} (removed by then in its generated API lifecycle)" if removed else ""
        return (
            f"Kubernetes {self} is newer than the newest release dra-migrate knows ({release.source}): "
            f"it is treated as {release.source}{without}; its feature gates and fields are {release.source}'s"
        )

    def api_version_for(self, kind: str) -> str:
        """The resource.k8s.io version written for `kind`: the most stable one served by default."""
        version = self.release.write_version(kind)
        if version is None:
            raise TargetVersionError(f"Kubernetes {self} serves no {RESOURCE_GROUP} version of {kind}")
        return version

    @property
    def dra_version(self) -> str:
        """The version written for ResourceClaimTemplates and the other core DRA kinds (1.34+: v1)."""
        return self.api_version_for("ResourceClaimTemplate")

    @property
    def dra_api_version(self) -> str:
        return f"{RESOURCE_GROUP}/{self.dra_version}"

    @property
    def schema_version(self) -> str:
        """The release whose OpenAPI schema checks this target (kubernetes-validate's naming)."""
        return f"{self.major}.{self.minor}.0"

    def feature_enabled(self, gate: str) -> bool:
        """Whether feature gate `gate` is on by default in this release."""
        return self.release.gate_on(gate)


def _version_order(api_version: str) -> tuple[int, int, int]:
    return releases.version_rank(api_version.rsplit("/", 1)[-1])
