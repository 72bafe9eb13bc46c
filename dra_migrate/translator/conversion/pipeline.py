"""One input file through the engine: parse, convert each document, edit the text, add templates.

Documents the engine leaves alone keep their exact source text; those whose text shows they cannot
change are not even parsed (translator.reading.prefilter). Changed YAML documents are edited surgically
(dra_migrate.manifests.yamltext) so comments and layout around the change survive.

Converting a YAML file (`process_yaml`) and placing its ResourceClaimTemplates (`place_templates`)
are separate steps, so files can be converted in parallel and still get exactly the templates a
one-by-one run gives them (translator.runner).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import yaml

from dra_migrate.engine import (
    Change,
    Config,
    DeviceRequestSpec,
    Finding,
    ServingClass,
    Severity,
    cached_by_marshal,
    convert,
    device_class_name,
)
from dra_migrate.manifests.yamltext import Document, EditResult, dump_json_like, edit_document, kubeyaml, split_stream
from dra_migrate.translator.conversion.registry import Claim, TemplateRegistry, template_conflict
from dra_migrate.translator.reading import limits
from dra_migrate.translator.reading.inputs import newline_of
from dra_migrate.translator.reading.prefilter import (
    Header,
    WholeStreamNeeded,
    load_document,
    passing_documents,
    prefilter_for,
)
from dra_migrate.translator.reading.sources import Source

_TEMPLATE_MARKERS = ("{{", "{%")


# Per-file and per-document records are plain classes: creating dataclasses at import would cost
# the start of every run about a millisecond each (their methods are compiled from generated source).


class DocumentReport:
    __slots__ = (
        "api_version",
        "end",
        "findings",
        "first_line",
        "index",
        "kind",
        "name",
        "namespace",
        "start",
        "status",
    )

    def __init__(self, index: int, start: int = 0, end: int = 0, first_line: int = 1) -> None:
        self.index = index
        # Where the document's text lies in its file's text (offsets), and the file line its text
        # starts on (1-based): reports find a finding's line from them (translator.results.locate).
        self.start = start
        self.end = end
        self.first_line = first_line
        self.kind: str | None = None
        self.api_version: str | None = None
        self.namespace: str | None = None
        self.name: str | None = None
        self.status = "unchanged"  # unchanged | changed | dropped | skipped
        self.findings: list[Finding] = []

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


class FileResult:
    __slots__ = (
        "documents",
        "error",
        "error_line",
        "existing",
        "extended",
        "file_findings",
        "original",
        "parts",
        "skipped",
        "source",
        "templates",
        "templates_inline",
        "text",
        "wanted",
    )

    def __init__(self, source: Source, original: str, text: str, templates_inline: int = 0) -> None:
        self.source = source
        self.original = original
        self.text = text
        self.documents: list[DocumentReport] = []
        self.templates: list[dict[str, Any]] = []  # for --templates-file
        self.extended: dict[str, DeviceRequestSpec] = {}  # names left to KEP-5004
        self.templates_inline = templates_inline  # how many were written next to their workloads
        self.error: str | None = None
        self.error_line: int | None = None  # where in the file the error is, when known
        self.skipped: str | None = None
        self.file_findings: list[Finding] = []  # about the file as a whole
        # Between converting a YAML file and placing its templates (place_templates): each document's
        # output text, the templates each document needs, and the templates the file already holds.
        self.parts: list[str] = []
        self.wanted: list[list[dict[str, Any]]] = []
        self.existing: list[dict[str, Any]] = []

    @property
    def changed(self) -> bool:
        return self.text != self.original

    @property
    def has_errors(self) -> bool:
        return (
            self.error is not None
            or any(d.has_errors for d in self.documents)
            or any(f.severity is Severity.ERROR for f in self.file_findings)
        )


class RunOptions(NamedTuple):
    config: Config
    # extendedResourceName -> every DeviceClass of the inputs that maps it, the scheduler's pick first.
    input_classes: dict[str, list[ServingClass]]
    templates_inline: bool = True  # False: templates go to --templates-file
    validate: bool = False
    prefilter: bool = True  # pass documents that cannot change through unparsed (translator.reading.prefilter)


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


def _validate(report: DocumentReport, original: Any, objects: list[dict[str, Any]], options: RunOptions) -> None:
    """Problems the conversion introduced (`schema`) apart from those the input already had (`schema-input`)."""
    from dra_migrate.translator.conversion.checks import split_by_origin  # the schemas load only for --validate

    target = options.config.target
    for index, obj in enumerate(objects):
        introduced, inherited = split_by_origin(obj, original if index == 0 else None, target)
        report.findings.extend(
            Finding(Severity.ERROR, "schema", "", f"{obj.get('kind')} invalid for Kubernetes {target}: {problem}")
            for problem in introduced
        )
        report.findings.extend(
            Finding(
                Severity.ERROR,
                "schema-input",
                "",
                f"{obj.get('kind')} invalid for Kubernetes {target}, as the input already was: {problem}",
            )
            for problem in inherited
        )


class _Converted:
    __slots__ = ("changed", "changes", "extended", "new_templates", "obj")

    def __init__(
        self,
        obj: Any,
        changed: bool,
        new_templates: list[dict[str, Any]],
        extended: list[DeviceRequestSpec] | None = None,
        changes: list[Change] | None = None,
    ) -> None:
        self.obj = obj
        self.changed = changed
        self.changes = changes  # from the document's object to `obj`
        self.new_templates = new_templates
        self.extended = [] if extended is None else extended


def _convert_document(obj: Any, report: DocumentReport, options: RunOptions) -> _Converted:
    """One document; the templates it needs are claimed later (`_claim`), in the run's order."""
    _describe(report, obj)
    if not is_manifest(obj):
        report.status = "skipped"
        return _Converted(obj, False, [])
    result = convert(obj, options.config)
    report.findings.extend(result.findings)
    if obj.get("kind") == "DeviceClass":
        report.findings.extend(_competing_classes(obj, options))
    if result.object is None:
        report.status = "dropped"
    elif result.changed:
        report.status = "changed"
    if options.validate and result.object is not None:
        _validate(report, obj, [result.object], options)
    return _Converted(result.object, result.changed, result.templates, result.extended, result.changes)


def _claim(
    templates: list[dict[str, Any]], report: DocumentReport, registry: TemplateRegistry, options: RunOptions
) -> list[dict[str, Any]]:
    """The templates this document writes: those its unit has not seen yet (a different spec under a
    name already there is an error, never an overwrite)."""
    new = []
    for template in templates:
        claim = registry.claim(template)
        if claim is Claim.NEW:
            new.append(template)
        elif claim is Claim.CONFLICT:
            report.findings.append(template_conflict(template))
    if options.validate:
        _validate(report, None, new, options)
    return new


def held_templates(objects: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Templates a file already holds (itself or inside a List): they are not added to it again."""
    for obj in objects:
        items = obj.get("items") if isinstance(obj, dict) and obj.get("kind") == "List" else [obj]
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("kind") == "ResourceClaimTemplate":
                yield item


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
    """New documents (templates, DeviceClasses) as a YAML stream, each after `---`, read by kubectl as written."""
    return "".join(f"---\n{_dumped(obj)}" for obj in objs)


# Equal templates are placed in many files of a tree (one per file that needs them); each is dumped once.
@cached_by_marshal(maxsize=1024)
def _dumped(obj: Any) -> str:
    return kubeyaml.dump(obj)


def _template_documents(templates: list[dict[str, Any]], text: str, nl: str) -> str:
    """Documents appended after `text`, in the file's own line ending."""
    if not templates:
        return ""
    lead = "" if text.endswith("\n") or not text else nl
    body = dump_documents(templates)
    return lead + (body.replace("\n", nl) if nl != "\n" else body)


def process_yaml(source: Source, text: str, options: RunOptions, first_line: int = 0) -> FileResult:
    """Convert a YAML file; its templates are placed by `place_templates`. `first_line`: where
    `text` starts in the file, when it is a chunk of one (translator.runner)."""
    if options.prefilter:
        try:
            # --validate loads every passing document, which parses it (see _pass_through)
            documents = passing_documents(text, prefilter_for(options.config), parse=not options.validate)
            return _convert_stream(FileResult(source, text, text), documents, "", options, first_line)
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
            mark = getattr(exc, "problem_mark", None)
            result.error_line = first_line + mark.line + 1 if mark else None
        return result
    return _convert_stream(result, stream.documents, stream.tail, options, first_line)


def _convert_stream(
    result: FileResult, documents: Iterable[Document], tail: str, options: RunOptions, first_line: int
) -> FileResult:
    """Documents one at a time, so a document's value can go once it is edited."""
    out: list[str] = []
    nl = newline_of(result.original)
    lines = _LineCounter(result.original, first_line)
    for index, document in enumerate(documents):
        report = DocumentReport(index, document.start, document.end, lines.at(document.start))
        result.documents.append(report)
        result.wanted.append([])
        if isinstance(document.obj, Header):
            _pass_through(document.text, document.obj, report, options)
            out.append(document.text)
            continue
        try:
            limits.check_document(document.text, document.obj)
        except limits.LimitError as exc:
            return _refused(result, f"document {index + 1}: {exc}; file left unchanged")
        result.existing.extend(held_templates([document.obj]))
        converted = _convert_document(kubeyaml.unshared(document.obj, document.text), report, options)
        result.extended.update((spec.resource, spec) for spec in converted.extended)
        if report.status == "dropped":
            header = f"---{nl}" if document.text.startswith("---") else ""
            out.append(f"{header}# dra-migrate: {report.kind} {report.name or ''} dropped (see the report){nl}")
        elif converted.changed:
            edited = edit_document(document.text, document.obj, converted.obj, converted.changes)
            out.append(edited.text)
            if edited.lost_comments:
                report.findings.extend(_lost_comment_findings(edited, report.first_line - 1))
        else:
            out.append(document.text)
        result.wanted[-1] = converted.new_templates
    if not result.documents or all(d.status == "skipped" for d in result.documents):
        result.skipped = "no Kubernetes objects (no apiVersion/kind)"
    result.parts = out
    result.text = "".join(out) + tail
    return result


class _LineCounter:
    """Line numbers of increasing offsets in one text, counting each newline once per file."""

    __slots__ = ("line", "offset", "text")

    def __init__(self, text: str, first_line: int) -> None:
        self.text = text
        self.offset = 0
        self.line = first_line + 1  # 1-based; `first_line` counts the lines before `text` in its file

    def at(self, offset: int) -> int:
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def _refused(result: FileResult, error: str) -> FileResult:
    refused = FileResult(result.source, result.original, result.original)
    refused.error = error
    return refused


def _pass_through(text: str, header: Header, report: DocumentReport, options: RunOptions) -> None:
    """A document the prefilter let through: unchanged, no findings; its object only to validate.

    With --validate the prefilter has not checked that the document parses (loading it here does):
    one that does not load takes the whole-stream way, as it would had the prefilter refused it.
    """
    report.kind, report.api_version = header.kind, header.api_version
    if options.validate:
        obj = load_document(text)
        _describe(report, obj)
        _validate(report, obj, [obj], options)


def place_templates(result: FileResult, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    """Claim each document's templates in the run's order: the first document that needs one writes it,
    in the file (inline placement) or for a templates file."""
    for template in result.existing:
        registry.note_existing(template)
    if not any(result.wanted):
        return result
    assert len(result.parts) == len(result.wanted) == len(result.documents), "one part and one wish per document"
    nl = newline_of(result.original)
    parts = list(result.parts)
    for index, wanted in enumerate(result.wanted):
        new = _claim(wanted, result.documents[index], registry, options)
        if options.templates_inline:
            parts[index] += _template_documents(new, parts[index], nl)
            result.templates_inline += len(new)
        else:
            result.templates.extend(new)
    tail = result.text[sum(len(part) for part in result.parts) :]
    result.text = "".join(parts) + tail
    result.wanted = [[] for _ in result.wanted]
    return result


def _lost_comment_findings(edited: EditResult, first_line: int) -> list[Finding]:
    """One warning per comment line a fallback editor could not keep (anchors, merge keys, tags)."""
    how = "rewritten" if edited.method == "rewrite" else "round-tripped"
    return [
        Finding(
            Severity.WARNING,
            "comment-lost",
            "",
            f"comment on line {first_line + line} lost ({comment}): the document was {how} in full "
            f"because of {edited.reason.split(';')[0]}, which the comment-keeping editor does not edit in place",
        )
        for line, comment in edited.lost_comments
    ]


def _yaml_error(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    return f"invalid YAML at {where}: {limits.parser_problem(exc)}"


def process_json(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    result = FileResult(source, text, text)
    try:
        obj = json.loads(text)
        limits.check_document(text, obj)
    except json.JSONDecodeError as exc:
        result.error = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        result.error_line = exc.lineno
        return result
    except (RecursionError, limits.LimitError) as exc:
        problem = exc if isinstance(exc, limits.LimitError) else limits.TOO_DEEP
        result.error = f"{problem}; file left unchanged"
        return result
    report = DocumentReport(0, 0, len(text))
    result.documents.append(report)
    for template in held_templates([obj]):
        registry.note_existing(template)
    converted = _convert_document(obj, report, options)
    converted.new_templates = _claim(converted.new_templates, report, registry, options)
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


def looks_json(source: Source, text: str) -> bool:
    return source.is_json or (source.path is None and text.lstrip().startswith(("{", "[")))


def process(source: Source, text: str, registry: TemplateRegistry, options: RunOptions) -> FileResult:
    """One whole file, templates placed."""
    if looks_json(source, text):
        return process_json(source, text, registry, options)
    return place_templates(process_yaml(source, text, options), registry, options)
