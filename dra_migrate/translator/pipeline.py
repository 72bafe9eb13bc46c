"""One input file through the engine: parse, convert each document, edit the text, add templates.

Documents the engine leaves alone keep their exact source text; changed YAML documents are edited
surgically (dra_migrate.translator.yamltext) so comments and layout around the change survive.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
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
from dra_migrate.translator.prefilter import Header, WholeStreamNeeded, passing_documents, prefilter_for
from dra_migrate.translator.registry import TemplateKey, TemplateRegistry, template_key
from dra_migrate.translator.sources import Source
from dra_migrate.translator.yamltext import Document, apply_changes, dump_json_like, split_stream

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
    # Between converting a YAML file and placing its templates (place_templates): each document's
    # output text, and the templates each document needs, which the run's registry has not seen yet.
    parts: list[str] = field(default_factory=list)
    wanted: list[list[dict[str, Any]]] = field(default_factory=list)

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
    prefilter: bool = True  # pass documents that cannot change through unparsed (translator.prefilter)


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
    from dra_migrate.translator.schema import validate_object  # the schemas load only for --validate

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
    new_templates = [t for t in result.templates if registry.is_new(t)]
    if result.object is None:
        report.status = "dropped"
    elif result.changed:
        report.status = "changed"
    if options.validate and result.object is not None:
        _validate(report, [result.object], options)
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


def _pass_through(text: str, header: Header, report: DocumentReport, options: RunOptions) -> None:
    """A document the prefilter let through: unchanged, no findings; its object only to validate."""
    report.kind, report.api_version = header.kind, header.api_version
    if options.validate:
        obj = yaml.load(text, Loader=yaml.CSafeLoader)
        _describe(report, obj)
        _validate(report, [obj], options)



def _template_documents(templates: list[dict[str, Any]], text: str) -> str:
    if not templates:
        return ""
    lead = "" if text.endswith("\n") or not text else "\n"
    return lead + dump_documents(templates)


def process_yaml(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    if options.prefilter:
        try:
            documents = passing_documents(text, prefilter_for(options.config))
            return _convert_stream(FileResult(source, text, text), documents, "", registry, options)
        except WholeStreamNeeded:
            pass  # start again the whole-stream way, which also reports any error as it always has
    result = FileResult(source, text, text)
    try:
        stream = split_stream(text)
    except (yaml.YAMLError, ValueError) as exc:
        if any(marker in text for marker in _TEMPLATE_MARKERS):
            result.skipped = "template (contains {{ }}), not a plain manifest"
        else:
            result.error = _yaml_error(exc)
        return result
    return _convert_stream(result, stream.documents, stream.tail, registry, options)


def _convert_stream(
    result: FileResult, documents: Iterable[Document], tail: str, registry: TemplateRegistry, options: RunOptions
) -> FileResult:
    """Documents one at a time (their values can go once edited); each template is wished for once."""
    out: list[str] = []
    wished: set[TemplateKey] = set()
    for index, document in enumerate(documents):
        report = DocumentReport(index)
        result.documents.append(report)
        if isinstance(document.obj, Header):
            _pass_through(document.text, document.obj, report, options)
            out.append(document.text)
            result.wanted.append([])
            continue
        converted = _convert_document(document.obj, report, registry, options)
        result.extended.update((spec.resource, spec) for spec in converted.extended)
        if report.status == "dropped":
            header = "---\n" if document.text.startswith("---") else ""
            out.append(f"{header}# dra-migrate: {report.kind} {report.name or ''} dropped (see the report)\n")
        elif converted.changed:
            out.append(apply_changes(document.text, document.obj, converted.obj))
        else:
            out.append(document.text)
        # A later document of this file never writes a template an earlier one wished for.
        wanted = [t for t in converted.new_templates if template_key(t) not in wished]
        wished.update(template_key(t) for t in wanted)
        result.wanted.append(wanted)
    if not result.documents or all(d.status == "skipped" for d in result.documents):
        result.skipped = "no Kubernetes objects (no apiVersion/kind)"
    result.parts = out
    result.text = "".join(out) + tail
    return result


def place_templates(result: FileResult, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    """Claim each document's templates in the run's order: the first document that needs one writes it.

    Separate from converting, so files can be converted in parallel and still get exactly the
    templates a one-by-one run gives them.
    """
    if not any(result.wanted):
        return result
    parts = list(result.parts)
    assert len(parts) == len(result.wanted) == len(result.documents), "one part and one wish per document"
    for index, wanted in enumerate(result.wanted):
        new = [t for t in wanted if registry.claim(t)]
        if options.validate:
            _validate(result.documents[index], new, options)
        if options.templates_inline:
            parts[index] += _template_documents(new, parts[index])
            result.templates_inline += len(new)
        else:
            result.templates.extend(new)
    tail = result.text[sum(len(part) for part in result.parts) :]
    result.text = "".join(parts) + tail
    result.wanted = [[] for _ in result.wanted]
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
    converted.new_templates = [t for t in converted.new_templates if registry.claim(t)]
    if options.validate:
        _validate(report, converted.new_templates, options)
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


def looks_json(source: Source, text: str) -> bool:
    return source.is_json or (source.path is None and text.lstrip().startswith(("{", "[")))


def process(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    if looks_json(source, text):
        return process_json(source, text, registry, options)
    return place_templates(process_yaml(source, text, registry, options), registry, options)
