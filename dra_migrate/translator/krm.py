"""`dra-migrate krm`: the converter as a KRM function (kustomize, kpt, Argo CD plugins).

Reads a `ResourceList` (config.kubernetes.io/v1, or a v1 `List`) on stdin and writes it back on
stdout in the same kind, per the KRM functions specification: items converted, the
ResourceClaimTemplates they need added to `items` (once per namespace, next to the first item
that needs each, with its path annotations), and every finding as a `results` entry with its
severity, the item's `resourceRef`, the `field` path and the item's file. Exit 0 when the list was
processed (findings, even errors, are results); 2 with a message on stderr when the input is not a
ResourceList or the configuration is invalid.

The function's configuration (`functionConfig`) is optional: a ConfigMap whose `data` may hold
`targetVersion`, `validate: "true"` and `config` (a dra-migrate configuration file's text), or
any object whose `spec` is such a configuration (the keys of the configuration file).
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import yaml

from dra_migrate.configfile import invalid_yaml, parse_settings
from dra_migrate.engine import (
    Config,
    ConfigError,
    Finding,
    Severity,
    TargetVersionError,
    convert,
    serving_classes,
    with_served_classes,
)
from dra_migrate.exits import EXIT_OK, fail
from dra_migrate.manifests.yamltext import kubeyaml
from dra_migrate.translator.conversion.registry import Claim, TemplateRegistry, template_conflict
from dra_migrate.translator.conversion.trainjobs import override_of, overriding, refusal
from dra_migrate.translator.reading import limits

RESOURCE_LIST = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1")
_PATH_ANNOTATIONS = ("internal.config.kubernetes.io/path", "config.kubernetes.io/path")
_COMMAND = "krm"


class KrmInputError(ValueError):
    """The input is not a ResourceList, or its functionConfig is not a valid configuration."""


def run_krm(stdin: TextIO, stdout: TextIO) -> int:
    try:
        resource_list = _read(stdin.read())
        config, validate = _settings(resource_list.get("functionConfig"))
    except (KrmInputError, ConfigError, TargetVersionError) as exc:
        return fail(_COMMAND, str(exc))
    resource_list["items"], results = transform(resource_list.get("items") or [], config, validate)
    if resource_list.get("kind") == "ResourceList":
        resource_list["results"] = [*(resource_list.get("results") or []), *results]
    else:
        for result in results:
            sys.stderr.write(f"{result['severity']}: {result['message']}\n")
    stdout.write(kubeyaml.dump(resource_list))  # strings every YAML reader in the chain takes as strings
    return EXIT_OK


def _read(text: str) -> dict[str, Any]:
    """The ResourceList, within the bounds every translator input has (translator/reading/limits.py)."""
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
        limits.check_document(text, data)
        data = kubeyaml.unshared(data, text)
    except yaml.YAMLError as exc:
        raise KrmInputError(f"stdin: {invalid_yaml(exc, limits.parser_problem(exc))}") from exc
    except limits.LimitError as exc:
        raise KrmInputError(f"stdin: {exc}") from exc
    except RecursionError as exc:
        raise KrmInputError(f"stdin: {limits.TOO_DEEP}") from exc
    if not isinstance(data, dict):
        raise KrmInputError("stdin: expected a ResourceList (config.kubernetes.io/v1) or a v1 List")
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not ((kind == "ResourceList" and api_version in RESOURCE_LIST) or (kind == "List" and api_version == "v1")):
        raise KrmInputError(f"stdin: expected a ResourceList (config.kubernetes.io/v1), got {api_version}/{kind}")
    if not isinstance(data.get("items") or [], list):
        raise KrmInputError("stdin: items: expected a list")
    return data


def _kind_of(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"the {type(value).__name__} {value!r}"[:80]


def _settings(function_config: Any) -> tuple[Config, bool]:
    if function_config is None:
        return parse_settings({}).config, False
    if not isinstance(function_config, dict):
        raise KrmInputError("functionConfig: expected an object")
    if function_config.get("kind") == "ConfigMap":
        data = function_config.get("data") or {}
        if not isinstance(data, dict):
            raise KrmInputError(f"functionConfig: data: expected a map of strings, not {_kind_of(data)}")
        try:
            file_config = yaml.load(str(data.get("config", "")), Loader=yaml.CSafeLoader) or {}
        except yaml.YAMLError as exc:
            raise KrmInputError(f"functionConfig: data.config: invalid YAML: {exc}") from exc
        unknown = sorted(set(data) - {"config", "targetVersion", "validate"})
        if unknown:
            raise KrmInputError(f"functionConfig: data: unknown keys {', '.join(unknown)}")
        validate = str(data.get("validate", "false")).lower() == "true"
        target = data.get("targetVersion")
        if target is not None and not isinstance(target, str):
            # ConfigMap data holds strings; a YAML number would also lose a release's zero (1.30 -> 1.3)
            raise KrmInputError(f'functionConfig: data.targetVersion: {target!r} is not a string; quote it ("1.34")')
        if target == "":  # an unset variable in a pipeline, not the default
            raise KrmInputError('functionConfig: data.targetVersion: empty; name a release ("1.34") or leave it out')
        return parse_settings(file_config, target).config, validate
    spec = function_config.get("spec") or {}
    if not isinstance(spec, dict):
        raise KrmInputError("functionConfig: spec: expected the keys of a dra-migrate configuration file")
    validate = bool(spec.get("validate", False))
    try:
        return parse_settings({k: v for k, v in spec.items() if k != "validate"}).config, validate
    except ConfigError as exc:
        raise KrmInputError(f"functionConfig: spec: {exc}") from exc


def transform(items: list[Any], config: Config, validate: bool = False) -> tuple[list[Any], list[dict[str, Any]]]:
    """Converted items with their new templates, and the results for every finding."""
    registry = TemplateRegistry()
    for item in items:
        if isinstance(item, dict) and item.get("kind") == "ResourceClaimTemplate":
            registry.note_existing(item)
        elif isinstance(item, dict) and item.get("kind") == "DeviceClass":
            registry.note_device_class(item)
    # DeviceClasses among the items map names for the migration strategy (KEP-5004), as in convert.
    served = serving_classes(registry.device_classes)
    config = with_served_classes(config, {name: classes[0] for name, classes in served.items()})
    overrides = [o for o in map(override_of, items) if o is not None]  # translator.conversion.trainjobs
    out: list[Any] = []
    results: list[dict[str, Any]] = []
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("kind"), str)):
            out.append(item)
            continue
        converted = convert(item, config)
        claims = [(t, registry.claim(t)) for t in converted.templates]
        new = [t for t, claim in claims if claim is Claim.NEW]
        findings = list(converted.findings)
        metadata = _metadata(item)
        name, namespace = metadata.get("name"), metadata.get("namespace")
        trainjobs = (
            overriding(item.get("apiVersion"), item["kind"], name, namespace, overrides) if converted.changed else []
        )
        if trainjobs:
            findings.append(Finding(Severity.ERROR, "not-written", "", refusal(item["kind"], name, trainjobs)))
        findings.extend(template_conflict(t) for t, claim in claims if claim is Claim.CONFLICT)
        if validate:
            findings.extend(_schema_findings([o for o in (converted.object, *new) if o is not None], config))
        results.extend(_result(item, finding) for finding in findings)
        if any(f.severity is Severity.ERROR for f in findings):
            out.append(item)  # an item with an error is converted whole or not at all: left as it came
            continue
        if converted.object is not None:
            out.append(_keep_annotations(item, converted.object) if converted.changed else item)
        out.extend(_beside(item, template) for template in new)
    return out, results


def _schema_findings(objects: list[dict[str, Any]], config: Config) -> list[Finding]:
    from dra_migrate.engine import Severity
    from dra_migrate.manifests.schema import validate_object

    return [
        Finding(Severity.ERROR, "schema", "", f"{obj.get('kind')} invalid for Kubernetes {config.target}: {error}")
        for obj in objects
        for error in validate_object(obj, config.target).errors
    ]


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    annotations = _metadata(obj).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def _keep_annotations(original: dict[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """The orchestrator's annotations (config.kubernetes.io/*) stay as they were on the item."""
    kept = {k: v for k, v in _annotations(original).items() if "config.kubernetes.io/" in k}
    if kept:
        metadata = converted.setdefault("metadata", {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **kept}
    return converted


def _beside(item: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """A new template goes to the file of the item that needs it (kpt writes items back by path)."""
    paths = {k: v for k, v in _annotations(item).items() if k in _PATH_ANNOTATIONS}
    if paths:
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(paths)
    return template


def _result(item: dict[str, Any], finding: Finding) -> dict[str, Any]:
    metadata = _metadata(item)
    name = metadata.get("name") or metadata.get("generateName")
    reference = {"apiVersion": item.get("apiVersion"), "kind": item.get("kind"), "name": name}
    if metadata.get("namespace"):
        reference["namespace"] = metadata["namespace"]
    result: dict[str, Any] = {
        "message": f"{finding.rule}: {finding.message}",
        "severity": str(finding.severity),
        "resourceRef": reference,
        "tags": {"rule": finding.rule},
    }
    if finding.path:
        result["field"] = {"path": finding.path}
    annotations = _annotations(item)
    path = next((annotations[k] for k in _PATH_ANNOTATIONS if k in annotations), None)
    if path is not None:
        result["file"] = {"path": path}
    return result
