"""Schema checks of generated objects against a Kubernetes release's OpenAPI (kubernetes-validate).

Kinds without a schema in that release (CRDs such as PyTorchJob) are reported as unchecked rather
than failing, since only their CRD knows their shape. Loading schemas is file I/O inside the
library, so callers keep this at their edges.
"""

from __future__ import annotations

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


def validate_object(obj: dict[str, Any], target: Target, strict: bool = True) -> SchemaResult:
    try:
        kubernetes_validate.validate(obj, target.schema_version, strict=strict)
    except kv_utils.SchemaNotFoundError:
        return SchemaResult(checked=False)
    except kv_utils.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path) or "(top level)"
        return SchemaResult(checked=True, errors=(f"{path}: {exc.message}",))
    return SchemaResult(checked=True)
