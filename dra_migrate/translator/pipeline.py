"""One input file through the engine: parse, convert each document, edit the text, add templates.

Documents the engine leaves alone keep their exact source text; changed YAML documents are edited
surgically (dra_migrate.translator.yamltext) so comments and layout around the change survive.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from dra_migrate.engine import (
    Config,
    DeviceRequestSpec,
    Finding,
    ServingClass,
    Severity,
    convert,
    device_class_name,
)
from dra_migrate.translator.registry import TemplateRegistry
from dra_migrate.translator.schema import validate_object
from dra_migrate.translator.sources import Source
from dra_migrate.translator.yamltext import apply_changes, dump_json_like, split_stream

_TEMPLATE_MARKERS = ("{{", "{%")


@dataclass(slots=True)
class DocumentReport:
    index: int
    kind: str | None = None
    api_version: str | None = None
    namespace: str | None = None
    name: str | None = None
    status: str = "unchanged"  # unchanged | changed | dropped | skipped
    findings: list[Finding] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


@dataclass(slots=True)
class FileResult:
    source: Source
    original: str
    text: str
    documents: list[DocumentReport] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)  # for --templates-file
    extended: dict[str, DeviceRequestSpec] = field(default_factory=dict)  # names left to KEP-5004
    templates_inline: int = 0  # how many were written next to their workloads
    error: str | None = None
    skipped: str | None = None

    @property
    def changed(self) -> bool:
        return self.text != self.original

    @property
    def has_errors(self) -> bool:
        return self.error is not None or any(d.has_errors for d in self.documents)


@dataclass(frozen=True, slots=True)
class RunOptions:
    config: Config
    # extendedResourceName -> every DeviceClass of the inputs that maps it, the scheduler's pick first.
    input_classes: dict[str, list[ServingClass]] = field(default_factory=dict)
    templates_inline: bool = True  # False: templates go to --templates-file
    validate: bool = False


def _describe(report: DocumentReport, obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    raw_metadata = obj.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    report.kind = obj.get("kind") if isinstance(obj.get("kind"), str) else None
    report.api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else None
    report.namespace = metadata.get("namespace") or None
    report.name = metadata.get("name") or metadata.get("generateName") or None


def is_manifest(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str)


def _validate(report: DocumentReport, objects: list[dict[str, Any]], options: RunOptions) -> None:
    for obj in objects:
        result = validate_object(obj, options.config.target)
        for error in result.errors:
            report.findings.append(
                Finding(
                    Severity.ERROR,
                    "schema",
                    "",
                    f"{obj.get('kind')} invalid for Kubernetes {options.config.target}: {error}",
                )
            )


@dataclass(slots=True)
class _Converted:
    obj: Any
    changed: bool
    new_templates: list[dict[str, Any]]
    extended: list[DeviceRequestSpec] = field(default_factory=list)


def _convert_document(obj: Any, report: DocumentReport, registry: TemplateRegistry, options: RunOptions) -> _Converted:
    _describe(report, obj)
    if not is_manifest(obj):
        report.status = "skipped"
        return _Converted(obj, False, [])
    result = convert(obj, options.config)
    report.findings.extend(result.findings)
    if obj.get("kind") == "DeviceClass":
        report.findings.extend(_competing_classes(obj, options))
    new_templates = [t for t in result.templates if registry.claim(t)]
    if result.object is None:
        report.status = "dropped"
    elif result.changed:
        report.status = "changed"
    if options.validate and result.object is not None:
        _validate(report, [result.object, *new_templates], options)
    return _Converted(result.object, result.changed, new_templates, result.extended)


def _competing_classes(device_class: dict[str, Any], options: RunOptions) -> list[Finding]:
    """A name mapped by more than one class: the scheduler uses one of them (docs/dra-api.md section 5)."""
    spec = device_class.get("spec")
    resource = spec.get("extendedResourceName") if isinstance(spec, dict) else None
    if not isinstance(resource, str) or not resource:
        return []
    rivals = [c.name for c in options.input_classes.get(resource, ())]
    if options.config.emits_device_classes and options.config.mappings.resolve(resource) is not None:
        rivals.append(f"{device_class_name(resource)} (--device-classes)")
    if len(rivals) < 2:
        return []
    return [
        Finding(
            Severity.WARNING,
            "extended-resource-class-conflict",
            "spec.extendedResourceName",
            f"{resource} is mapped by {len(rivals)} DeviceClasses ({', '.join(rivals)}); the scheduler uses only "
            f"{rivals[0]!r} (newest, then first by name): keep one",
        )
    ]


def dump_documents(objs: Iterable[Any]) -> str:
    """New documents (templates, DeviceClasses) as a YAML stream, each after `---`, lines never folded."""
    return "".join(
        f"---\n{yaml.dump(obj, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False, width=1 << 16)}"
        for obj in objs
    )


def _template_documents(templates: list[dict[str, Any]], text: str) -> str:
    if not templates:
        return ""
    lead = "" if text.endswith("\n") or not text else "\n"
    return lead + dump_documents(templates)


def process_yaml(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    result = FileResult(source, text, text)
    try:
        stream = split_stream(text)
    except (yaml.YAMLError, ValueError) as exc:
        if any(marker in text for marker in _TEMPLATE_MARKERS):
            result.skipped = "template (contains {{ }}), not a plain manifest"
        else:
            result.error = _yaml_error(exc)
        return result
    out: list[str] = []
    for index, document in enumerate(stream.documents):
        report = DocumentReport(index)
        result.documents.append(report)
        converted = _convert_document(document.obj, report, registry, options)
        result.extended.update((spec.resource, spec) for spec in converted.extended)
        if report.status == "dropped":
            header = "---\n" if document.text.startswith("---") else ""
            out.append(f"{header}# dra-migrate: {report.kind} {report.name or ''} dropped (see the report)\n")
        elif converted.changed:
            out.append(apply_changes(document.text, document.obj, converted.obj))
        else:
            out.append(document.text)
        if options.templates_inline:
            out.append(_template_documents(converted.new_templates, out[-1]))
            result.templates_inline += len(converted.new_templates)
        else:
            result.templates.extend(converted.new_templates)
    if not result.documents or all(d.status == "skipped" for d in result.documents):
        result.skipped = "no Kubernetes objects (no apiVersion/kind)"
    result.text = stream.join(out)
    return result


def _yaml_error(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"invalid YAML at {where}: {problem}"


def process_json(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    result = FileResult(source, text, text)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        result.error = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        return result
    report = DocumentReport(0)
    result.documents.append(report)
    converted = _convert_document(obj, report, registry, options)
    result.extended.update((spec.resource, spec) for spec in converted.extended)
    if report.status == "skipped":
        result.skipped = "not a Kubernetes object (no apiVersion/kind)"
        return result
    new = converted.obj
    if converted.new_templates and options.templates_inline:
        # JSON holds one document: the object and its templates travel together as a List.
        result.templates_inline += len(converted.new_templates)
        if isinstance(new, dict) and new.get("kind") == "List":
            new = {**new, "items": [*new.get("items", []), *converted.new_templates]}
        else:
            new = {"apiVersion": "v1", "kind": "List", "items": [new, *converted.new_templates]}
    elif converted.new_templates:
        result.templates.extend(converted.new_templates)
    if report.status == "dropped":
        new = {"apiVersion": "v1", "kind": "List", "items": []}
    if new is not obj:
        result.text = dump_json_like(text, new)
    return result


Processor = Callable[[Source, str, TemplateRegistry, RunOptions], FileResult]


def process(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    looks_json = source.is_json or (source.path is None and text.lstrip().startswith(("{", "[")))
    processor: Processor = process_json if looks_json else process_yaml
    return processor(source, text, registry, options)
