"""Schema checks of generated objects against a Kubernetes release's OpenAPI (kubernetes-validate).

Kinds without a schema in that release (CRDs such as PyTorchJob) are reported as unchecked rather
than failing, since only their CRD knows their shape. Loading schemas is file I/O inside the
library, so callers keep this at their edges.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import kubernetes_validate
from kubernetes_validate import utils as kv_utils

from dra_migrate.engine import Target


@dataclass(frozen=True, slots=True)
class SchemaResult:
    checked: bool
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.cache
def schema_version(target: Target) -> str:
    """The target's schema release, or the newest kubernetes-validate ships for a target newer than that."""
    shipped: list[str] = sorted({str(v) for v in kv_utils.all_versions()}, key=_release)
    older = [v for v in shipped if _release(v) <= _release(target.schema_version)]
    return older[-1] if older else shipped[0]


def schema_notice(target: Target) -> str | None:
    """What --validate checks a target without its own schema against (once per run)."""
    used = schema_version(target)
    if used == target.schema_version:
        return None
    return (
        f"--validate: kubernetes-validate has no schema for Kubernetes {target}; "
        f"objects are checked against {used.rsplit('.', 1)[0]}'s"
    )


def validate_object(obj: dict[str, Any], target: Target, strict: bool = True) -> SchemaResult:
    try:
        kubernetes_validate.validate(obj, schema_version(target), strict=strict)
    except kv_utils.SchemaNotFoundError:
        return SchemaResult(checked=False)
    except kv_utils.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path) or "(top level)"
        return SchemaResult(checked=True, errors=(f"{path}: {exc.message}",))
    return SchemaResult(checked=True)
