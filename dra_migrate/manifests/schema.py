"""Schema checks of generated objects against a Kubernetes release's OpenAPI (kubernetes-validate's schemas).

Kinds without a schema in that release (CRDs such as PyTorchJob) are reported as unchecked rather
than failing, since only their CRD knows their shape. Loading schemas is file I/O inside the
library, so callers keep this at their edges.

Each schema file is read and compiled once per process: a compiled predicate (schemafast) answers
valid or invalid, and jsonschema, with the same schemas and registry kubernetes_validate.validate
builds, words the error of an invalid object. So strictness and messages are kubernetes-validate's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from dra_migrate.engine import Target
from dra_migrate.manifests.schemafast import Check, Compiler, UnsupportedError


@dataclass(frozen=True, slots=True)
class SchemaResult:
    checked: bool
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class KindSchema:
    full: jsonschema.Draft202012Validator
    fast: Check | None  # None when the schema uses more than schemafast compiles


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
    schema = _object_schema(obj, target, strict)
    if schema is None:
        return SchemaResult(checked=False)
    if schema.fast is not None and schema.fast(obj):
        return SchemaResult(checked=True)
    error = next(schema.full.iter_errors(obj), None)  # the one Validator.validate raises
    if error is None:
        return SchemaResult(checked=True)
    return SchemaResult(checked=True, errors=(_described(error),))


def first_type_error(obj: dict[str, Any], target: Target) -> str | None:
    """The first field of `obj` whose type its kind's schema (not strict) refuses; missing fields are no error."""
    schema = _object_schema(obj, target, False)
    if schema is None or (schema.fast is not None and schema.fast(obj)):
        return None
    error = next((e for e in schema.full.iter_errors(obj) if e.validator != "required"), None)
    return _described(error) if error is not None else None


def _object_schema(obj: dict[str, Any], target: Target, strict: bool) -> KindSchema | None:
    return kind_schema(schema_dir(schema_version(target), strict), str(obj["kind"]), str(obj["apiVersion"]))


def _described(error: jsonschema.ValidationError) -> str:
    return f"{'.'.join(str(p) for p in error.path) or '(top level)'}: {error.message}"


@functools.cache
def schema_dir(desired_version: str, strict: bool) -> str:
    """kubernetes_validate.validate's choice: the newest schema release not newer than the target."""
    if kv_utils.major_minor(desired_version) > kv_utils.latest_version():
        raise kv_utils.VersionNotSupportedError(version=kv_utils.major_minor(desired_version))
    version = [v for v in kv_utils.all_versions() if kv_utils.major_minor(v) <= kv_utils.major_minor(desired_version)][
        -1
    ]
    return f"v{version}-local" + ("-strict" if strict else "")


@functools.cache
def _definitions(schema_dir: str) -> tuple[Registry[Any], Compiler]:
    """The release's `_definitions.json`: one registry (kind schemas are added to it, sharing it) and
    one compiler (each definition compiled once)."""
    contents = kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", schema_dir)
    registry: Registry[Any] = (Resource.from_contents(contents) @ Registry()).crawl()
    return registry, Compiler(contents)


# A kind and an apiVersion (group/version or a core version) as the API server accepts them: DNS
# subdomain group, DNS-1035 label version.
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_API_VERSION = re.compile(r"(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?/)?[a-z](?:[-a-z0-9]*[a-z0-9])?")


@functools.cache
def kind_schema(schema_dir: str, kind: str, api_version: str) -> KindSchema | None:
    """The compiled schema of one kind (None when the release has no schema for it)."""
    if not (_KIND.fullmatch(kind) and _API_VERSION.fullmatch(api_version)):
        return None  # no schema file has such a name (and it must not reach a file path)
    # rbac.authorization.k8s.io/v1 -> rbac-v1, as kubernetes-validate names its files
    file_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        contents = kv_utils.schema_contents(
            f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{file_version}.json", schema_dir
        )
    except FileNotFoundError:
        return None
    definitions, compiler = _definitions(schema_dir)
    full = jsonschema.Draft202012Validator(contents, registry=Resource.from_contents(contents) @ definitions)
    try:
        fast: Check | None = compiler.compile(contents)
    except UnsupportedError:
        fast = None
    return KindSchema(full, fast)
