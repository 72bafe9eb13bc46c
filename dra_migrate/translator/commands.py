"""`dra-migrate convert` and `dra-migrate diff`: the offline translator's command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from dra_migrate.configfile import load_config
from dra_migrate.engine import (
    ConfigError,
    DeviceRequestSpec,
    Finding,
    Severity,
    TargetVersionError,
    build_device_class,
    convert,
    serving_classes,
    with_emitted_classes,
    with_served_classes,
    with_strategy,
)
from dra_migrate.exits import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, fail
from dra_migrate.translator import limits
from dra_migrate.translator.inputs import InputTooLargeError, NotRegularFileError, read_file, read_stdin
from dra_migrate.translator.kustomize import FILE_NAMES, TEMPLATES_FILE, Kustomization, KustomizationIndex
from dra_migrate.translator.naming import InputNames
from dra_migrate.translator.output import (
    JsonWriter,
    StdoutWriter,
    install_signal_cleanup,
    write_atomic,
    write_bytes_atomic,
)
from dra_migrate.translator.pipeline import FileResult, RunOptions, place_templates, process
from dra_migrate.translator.placement import add_resource, merge_device_classes, merge_templates
from dra_migrate.translator.prefilter import documents_mentioning
from dra_migrate.translator.registry import TemplateKey, TemplateRegistry, template_key
from dra_migrate.translator.render import find_renderer
from dra_migrate.translator.report import Progress, Reporter, paint, use_colour
from dra_migrate.translator.runner import Work, default_jobs, read_error, run_files
from dra_migrate.translator.sources import Source, common_base, discover, display_path, has_stdin, unselected
from dra_migrate.translator.yamltext import kubeyaml


class UsageError(Exception):
    pass


_EXISTING_MARKERS = ("ResourceClaimTemplate", "extendedResourceName")


def _objects(text: str) -> list[Any]:
    """Objects of the documents that can be a template or a KEP-5004 DeviceClass (only those are loaded)."""
    if not any(marker in text for marker in _EXISTING_MARKERS):
        return []
    out: list[Any] = []
    for document in documents_mentioning(text, _EXISTING_MARKERS):
        is_list = isinstance(document, dict) and document.get("kind") == "List"
        items = document.get("items") if is_list else [document]
        out.extend(item for item in items if isinstance(items, list) and isinstance(item, dict))
    return out


class Run:
    """Shared driver for convert and diff: config, sources, per-file processing, templates, the report.

    Template placement: `stream` (stdout: the stream is one unit), `single` (--templates-file),
    `per-file`, or `kustomization` (files a kustomization lists get a templates file beside it)."""

    def __init__(self, args: argparse.Namespace, placement: str) -> None:
        config = load_config(args.config, args.target_version)
        if args.strategy:
            config = with_strategy(config, args.strategy)
        # limits.MAX_DEPTH levels of nesting through recursive walks (Python 3.11 frames are cheap)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), limits.RECURSION_LIMIT))
        self.args = args
        self.placement = placement
        self.limit: int = args.max_file_size
        # Sources are walked lazily (twice: templates first), so memory does not grow with the tree.
        self._paths, self._include, self._exclude = args.paths, args.include, args.exclude
        if has_stdin(args.paths) and sys.stdin.isatty():
            raise UsageError("no input: name files or directories, or pipe manifests on stdin (-)")
        self.stdin_text = self._read_stdin() if has_stdin(args.paths) else None
        self._streams: dict[Path, str] = {}
        self.registry = TemplateRegistry()  # DeviceClasses; templates too for the stream and single placements
        self.names = InputNames(common_base(args.paths))
        self.index = KustomizationIndex(self.names)
        self.existing: dict[Path, set[TemplateKey]] = {}  # templates each input file already holds
        self._prepass()
        # DeviceClasses among the inputs map names for the migration strategy (KEP-5004).
        input_classes = serving_classes(self.registry.device_classes)
        config = with_served_classes(config, {name: classes[0] for name, classes in input_classes.items()})
        if args.device_classes:
            config = with_emitted_classes(config)
        self.options = RunOptions(
            config=config,
            input_classes=input_classes,
            templates_inline=placement != "single",
            validate=args.validate,
        )
        self.extended: dict[str, DeviceRequestSpec] = {}  # names left to KEP-5004, for --device-classes
        self.work = Work(self.options, self.limit)
        self.jobs: int = args.jobs or default_jobs()
        self.reporter = Reporter(args, str(config.target))
        if config.target.notice:
            self.reporter.add_run(Finding(Severity.WARNING, "target-not-released", "", config.target.notice))
        schema = None
        if args.validate:
            from dra_migrate.translator.schema import schema_notice  # the schemas load only for --validate

            schema = schema_notice(config.target)
        if schema:
            self.reporter.add_run(Finding(Severity.WARNING, "schema-fallback", "", schema))
        self.any_errors = False
        self.needs: dict[Path, list[dict[str, Any]]] = {}  # kustomization file -> templates its files need
        self.roots: dict[Path, Path] = {}  # kustomization file -> the directory argument it was found under
        self.templates: list[dict[str, Any]] = []  # for --templates-file
        self.templates_path = Path(args.templates_file) if placement == "single" else None
        # input file -> the file its templates go to: the input is written only once that file can be
        self.unit_of: dict[Path, Path] = {}
        self.charts: set[Path] = set()  # Helm charts that request mapped devices (helm-chart warnings)
        self._seen: dict[Path, str] = {}  # resolved path -> display, to convert a symlinked file once

    def _read_stdin(self) -> str:
        try:
            return read_stdin(self.limit)
        except (InputTooLargeError, UnicodeDecodeError) as exc:
            raise UsageError(f"<stdin>: {exc}") from exc

    def device_classes_file(self) -> FileResult:
        """The --device-classes file with a DeviceClass for every name left to KEP-5004 in this run,
        in the target's version, merged into what the file holds (its other objects and comments kept)."""
        path = Path(self.args.device_classes)
        source = Source(path, Path(path.name))
        try:
            existing = read_file(path, self.limit) if path.exists() else ""
        except (OSError, UnicodeDecodeError, InputTooLargeError) as exc:
            result = FileResult(source, "", "")
            result.error = f"cannot read, DeviceClasses not written: {getattr(exc, 'strerror', None) or exc}"
            self.record(result)
            return result
        merged = merge_device_classes(existing, self._device_classes())
        result = FileResult(source, existing, merged.text)
        result.error = merged.error
        result.file_findings.extend(Finding(Severity.WARNING, "device-class-kept", "", c) for c in merged.conflicts)
        self.record(result)
        return result

    def _device_classes(self) -> list[dict[str, Any]]:
        documents = []
        for resource in sorted(self.extended):
            device_class = build_device_class(self.extended[resource])
            written = convert(device_class, self.options.config)
            name = device_class["metadata"]["name"]
            for finding in written.problems:
                # A class the target cannot hold is not written: the report says why.
                self.reporter.add_run(
                    Finding(finding.severity, finding.rule, finding.path, f"DeviceClass {name}: {finding.message}")
                )
            self.any_errors |= written.has_errors
            if written.object is not None and not written.has_errors:
                documents.append(written.object)
        return documents

    def sources(self) -> Iterator[Source]:
        return discover(self._paths, self._include, self._exclude)

    def _read(self, source: Source) -> str:
        if source.path is None:
            return self.stdin_text or ""
        if source.path in self._streams:
            return self._streams[source.path]
        # a file found in a directory must be a regular one (a FIFO there would block the run); a
        # pipe named on the command line (`<(...)`) reads once: keep it for the second pass
        text = read_file(source.path, self.limit, regular_only=source.root is not None)
        if not source.path.is_file():
            self._streams[source.path] = text
        return text

    def _prepass(self) -> None:
        """Templates and KEP-5004 DeviceClasses already in the inputs; kustomizations in the tree."""
        shared = self.placement in ("stream", "single")
        for source in self.sources():
            if source.path is not None and source.path.name in FILE_NAMES:
                self.index.at(source.path.parent)
            try:
                objects = _objects(self._read(source))
            except (OSError, UnicodeDecodeError, InputTooLargeError):
                continue
            for obj in objects:
                if obj.get("kind") == "ResourceClaimTemplate":
                    if shared:
                        self.registry.note_existing(obj)
                    if source.path is not None:
                        self.existing.setdefault(source.path.resolve(), set()).add(template_key(obj))
                elif obj.get("kind") == "DeviceClass":
                    self.registry.note_device_class(obj)

    def results(self) -> Iterator[FileResult]:
        total = sum(1 for _ in self.sources()) if self.reporter.progress_allowed and sys.stderr.isatty() else 0
        progress = Progress(total)
        for result in run_files(self.sources(), self, self.jobs):
            self.record(result)
            progress.step(result.source.display)
            yield result
        progress.close()

    def record(self, result: FileResult) -> None:
        if result.skipped is not None and result.original and result.source.path is not None:
            self._note_chart(result)
        self.extended.update(result.extended)
        self.reporter.add(result)
        self.any_errors |= result.has_errors

    def _note_chart(self, result: FileResult) -> None:
        """A skipped file of a Helm chart that requests mapped devices: the chart needs the post-renderer."""
        from dra_migrate.translator.charts import POST_RENDERER, chart_root, requested_devices

        assert result.source.path is not None
        devices = requested_devices(result.original, self.options.config)
        root = chart_root(result.source.path, result.source.root) if devices else None
        if root is None or root in self.charts:
            return
        self.charts.add(root)
        message = (
            f"the Helm chart {display_path(root)} requests {', '.join(devices)}: what it installs depends on its "
            f"values, so convert its rendered manifests with {POST_RENDERER}"
        )
        result.file_findings.append(Finding(Severity.WARNING, "helm-chart", "", message))

    def _unit(self, source: Source) -> tuple[TemplateRegistry, RunOptions, Kustomization | None]:
        if self.placement in ("stream", "single"):
            return self.registry, self.options, None
        owner = None
        if self.placement != "single" and source.path is not None and source.root is not None:
            owner = self.index.owner(source.path, source.root)
            # per-file: a patch file holds only the patch (kustomize refuses other documents in it)
            if self.placement == "per-file" and owner is not None and source.path.resolve() not in owner.patches:
                owner = None
        options = self.options._replace(templates_inline=owner is None)
        return self.registry.child(), options, owner

    # -- the steps of translator.runner ---------------------------------------------------

    def admit(self, source: Source) -> FileResult | None:
        """A file reached again through a symbolic link is converted once (in place it would be written twice)."""
        if source.path is not None and self.args.in_place_like:
            real = source.path.resolve()
            if real in self._seen:
                result = FileResult(source, "", "")
                result.skipped = f"the same file as {self._seen[real]} (a symbolic link): converted once, through it"
                return result
            self._seen[real] = source.display
        return None

    def local(self, source: Source) -> bool:
        return source.path is None or source.is_json or source.path in self._streams or not source.path.is_file()

    def whole(self, source: Source) -> FileResult:
        try:
            text = self._read(source)
        except NotRegularFileError as exc:
            result = FileResult(source, "", "")
            result.skipped = f"{exc.strerror}: not read"
            return result
        except (OSError, UnicodeDecodeError, InputTooLargeError) as exc:
            result = FileResult(source, "", "")
            result.error = read_error(exc)
            return result
        registry, options, owner = self._unit(source)
        try:
            result = process(source, text, registry, options)
        except Exception as exc:  # one bad file must not stop a bulk run or leak a traceback
            result = FileResult(source, text, text)
            result.error = f"internal error, file left unchanged: {type(exc).__name__}: {exc}"
            return result
        return self._settle(result, owner)

    def place(self, result: FileResult) -> FileResult:
        registry, options, owner = self._unit(result.source)
        try:
            placed = place_templates(result, registry, options)
        except Exception as exc:  # as in whole(): the file is left unchanged and the run goes on
            placed = FileResult(result.source, result.original, result.original)
            placed.error = f"internal error, file left unchanged: {type(exc).__name__}: {exc}"
            return placed
        return self._settle(placed, owner)

    def _settle(self, result: FileResult, owner: Kustomization | None) -> FileResult:
        """Templates that go to a kustomization's templates file or to --templates-file: they are
        counted in the report where they land (that file's result), not here."""
        source = result.source
        if owner is not None and result.templates and source.root is not None:
            self.needs.setdefault(owner.path, []).extend(result.templates)
            self.roots.setdefault(owner.path, source.root)
            self._hold(source, owner.path)
            result.templates = []
        elif self.placement == "single":
            if result.templates:
                assert self.templates_path is not None
                self._hold(source, self.templates_path)
            self.templates.extend(result.templates)
            result.templates = []
        return result

    def _hold(self, source: Source, unit: Path) -> None:
        if source.path is not None:
            self.unit_of[source.path] = unit

    # -- templates outside the converted files --------------------------------------------

    def template_units(self) -> Iterator[tuple[Path, list[FileResult]]]:
        """Files the run writes besides the inputs, by the unit (`unit_of`) whose inputs need them:
        --templates-file, or a kustomization's templates file and the kustomization itself."""
        if self.placement == "single":
            path = self.templates_path
            assert path is not None
            yield path, [self._merged_file(Source(path, Path(path.name)), self.templates)]
        for path, templates in self.needs.items():
            yield path, list(self._kustomization_files(path, templates))

    def template_files(self) -> Iterator[FileResult]:
        for _, results in self.template_units():
            yield from results

    def _merged_file(
        self, source: Source, templates: list[dict[str, Any]], notes: list[Finding] | None = None
    ) -> FileResult:
        assert source.path is not None
        path = source.path
        try:
            existing = read_file(path, self.limit) if path.exists() else ""
        except (OSError, UnicodeDecodeError, InputTooLargeError) as exc:
            result = FileResult(source, "", "")
            result.error = f"cannot read, templates not written: {getattr(exc, 'strerror', None) or exc}"
            return result
        merged = merge_templates(existing, templates)
        result = FileResult(source, existing, merged.text, templates_inline=merged.added)
        result.error = merged.error
        result.file_findings.extend(Finding(Severity.ERROR, "template-conflict", "", c) for c in merged.conflicts)
        result.file_findings.extend(notes or ())
        self.record(result)
        return result

    def _kustomization_files(self, path: Path, templates: list[dict[str, Any]]) -> Iterator[FileResult]:
        kustomization = self.index.at(path.parent)
        assert kustomization is not None
        root = self.roots[path]
        elsewhere: set[TemplateKey] = set()
        for other in self.index.reachable(kustomization):
            elsewhere.update(template_key(t) for t in self.needs.get(other.path, ()))
            for listed in other.files:
                elsewhere.update(self.existing.get(listed, ()))
        for listed in kustomization.files:
            if listed.name != TEMPLATES_FILE:
                elsewhere.update(self.existing.get(listed, ()))
        placed = [t for t in templates if template_key(t) not in elsewhere]
        if not placed:
            return
        templates_file = self.names.source(kustomization.directory / TEMPLATES_FILE, root)
        templates_result = self._merged_file(templates_file, placed, self._rename_warnings(kustomization))
        yield templates_result
        edited = add_resource(kustomization.text, kustomization.data, TEMPLATES_FILE)
        if edited is not None and templates_result.error is None:
            source = self.names.source(kustomization.path, root)
            result = FileResult(source, kustomization.text, edited)
            self.record(result)
            yield result

    def withdraw(self, waiting: Iterable[FileResult], why: str) -> None:
        """Files of a unit that cannot be written whole are not written at all."""
        for result in waiting:
            self.reporter.add_file_finding(result, Finding(Severity.ERROR, "not-written", "", f"left unchanged: {why}"))
            self.any_errors = True

    # -- overlays --------------------------------------------------------------------------

    def complete_patches(self, results: Iterable[FileResult]) -> None:
        """Converted strategic-merge patches get their base's other claims (translator.overlays)."""
        from dra_migrate.translator.overlays import base_claims, complete_patch

        changed = {r.source.path.resolve(): r for r in results if r.changed and r.source.path is not None}
        for kustomization in self.index.known():
            patches = [changed[p] for p in sorted(kustomization.patches) if p in changed]
            patches = [r for r in patches if "resourceClaims" in r.text]
            if not patches:
                continue
            resources: set[Path] = set()
            for k in (kustomization, *self.index.reachable(kustomization)):
                resources |= k.files - k.patches
            bases = base_claims((self._current_text(p, changed) for p in sorted(resources)), self.options.config)
            for result in patches:
                result.text = complete_patch(result.text, bases, self.options.config)

    def _current_text(self, path: Path, changed: dict[Path, FileResult]) -> str:
        if path in changed:
            return changed[path].text
        try:
            return read_file(path, self.limit)
        except (OSError, UnicodeDecodeError, InputTooLargeError):
            return ""  # its error is reported where the file is converted

    # -- render verification --------------------------------------------------------------

    def verifies_renders(self) -> bool:
        return bool(self.args.verify_render) and self.placement != "stream" and bool(self.index.known())

    def _display(self, found: Path) -> str:
        """A resolved path as the user would name it, under the directory argument that holds it."""
        for typed in self._paths:
            if typed != "-":
                source = self.names.source(found, Path(typed))
                if source.root is not None:
                    return source.display
        return display_path(found)

    def failed_renders(self, changes: dict[Path, str]) -> list[Any]:
        """Build every kustomization root among the inputs before and after `changes` (resolved path ->
        text); report each, and return the roots whose render changed (translator.verify.RootCheck)."""
        from dra_migrate.translator.verify import verify  # only runs over kustomizations need it

        renderer = find_renderer()
        if renderer is None:
            message = "no kustomize or kubectl found: kustomization roots were not rendered to check the conversion"
            self.reporter.add_run(Finding(Severity.WARNING, "render-not-verified", "", message))
            return []
        arguments = [self.names.resolved(Path(p)) for p in self._paths if p != "-" and Path(p).is_dir()]
        extra = self.templates if self.placement == "single" else []
        checks = verify(renderer, self.options.config, self.index, arguments, changes, extra)
        for check in checks:
            where = self._display(check.kustomization.path)
            for problem in check.problems:
                self.reporter.add_about(where, Finding(Severity.ERROR, "render-mismatch", "", problem))
            if check.not_built is not None:
                message = f"not verified: kustomize cannot build it before the conversion: {check.not_built}"
                self.reporter.add_about(where, Finding(Severity.WARNING, "render-not-verified", "", message))
            elif not check.failed:
                message = f"`{renderer.label} build` renders the same devices for every container before and after"
                self.reporter.add_about(where, Finding(Severity.INFO, "render-verified", "", message))
        failed = [c for c in checks if c.failed]
        self.any_errors |= bool(failed)
        return failed

    def _rename_warnings(self, kustomization: Kustomization) -> list[Finding]:
        """namePrefix/nameSuffix rename the templates but not the pods' references to them."""
        renaming = [kustomization] if kustomization.renames else []
        renaming += [k for k in self.index.known() if k.renames and kustomization in self.index.reachable(k)]
        return [
            Finding(
                Severity.WARNING,
                "template-reference",
                "",
                f"{display_path(k.path)} sets {' and '.join(k.renames)}: kustomize renames the generated "
                "ResourceClaimTemplates but not resourceClaimTemplateName in the pods that use them, so those "
                "references would not be satisfied; drop the prefix for ResourceClaimTemplates or rename them by hand",
            )
            for k in renaming
        ]


def _placement(args: argparse.Namespace, stream: bool) -> str:
    if getattr(args, "templates_file", None):
        return "single"
    if stream:
        return "stream"
    return str(args.template_placement or "kustomization")


def _output_path_problem(args: argparse.Namespace) -> str | None:
    """What makes a named output impossible before anything is converted (never a traceback later)."""
    output_dir = getattr(args, "output_dir", None)
    if output_dir and Path(output_dir).exists() and not Path(output_dir).is_dir():
        return f"--output-dir {output_dir} is a file, not a directory"
    for flag, value in (("--device-classes", args.device_classes), ("--templates-file", args.templates_file)):
        if value and Path(value).is_dir():
            return f"{flag} {value} is a directory; name a YAML file"
    if args.report_file:
        report = Path(args.report_file)
        if report.is_dir():
            return f"--report-file {report} is a directory"
        if not report.parent.is_dir():
            return f"--report-file {report}: the directory {report.parent} does not exist"
    return None


def _start(args: argparse.Namespace, stream: bool) -> Run:
    problem = _output_path_problem(args)
    if problem is not None:
        raise UsageError(problem)
    try:
        return Run(args, _placement(args, stream))
    except (ConfigError, TargetVersionError) as exc:
        raise UsageError(f"config: {exc}") from exc


def _write(run: Run, result: FileResult, target: Path, durable: bool = True) -> None:
    """The result's text to `target`; a write that fails (a read-only directory, a path that is a
    file) is the file's error, not a traceback."""
    try:
        write_atomic(target, result.text, durable)
    except OSError as exc:
        where = exc.filename or result.source.display
        run.withdraw([result], f"cannot write {where}: {exc.strerror or exc}")


def _emit(run: Run, result: FileResult, writer: StdoutWriter | JsonWriter) -> None:
    args = run.args
    path = result.source.path
    if args.in_place:
        if result.changed and result.error is None and path is not None:
            # write through a symbolic link to the file it points at: the link stays a link
            _write(run, result, path.resolve())
    elif args.output_dir:
        target = Path(args.output_dir) / result.source.relative
        if result.error is not None and not result.original:
            _copy_as_is(result.source, target)  # unreadable as text: the bytes, never an empty placeholder
        elif result.skipped is None or result.text:
            _write(run, result, target, durable=False)
    elif isinstance(writer, JsonWriter):
        writer.add(_output_objects(result))
    else:
        writer.write(result.text)


def _copy_as_is(source: Source, target: Path) -> None:
    if source.path is not None and source.path.is_file():
        with contextlib.suppress(OSError):  # the read error is in the report already
            write_bytes_atomic(target, source.path.read_bytes())


def _copy_unselected(args: argparse.Namespace) -> None:
    """The files of the directory arguments that are not converted, copied as they are."""
    for source in unselected(args.paths, args.include, args.exclude):
        target = Path(args.output_dir) / source.relative
        if not target.exists():
            _copy_as_is(source, target)


def _output_objects(result: FileResult) -> list[Any]:
    try:
        if result.source.is_json or result.text.lstrip().startswith(("{", "[")):
            return [json.loads(result.text)]
        return kubeyaml.load_all(result.text)
    except (ValueError, yaml.YAMLError):
        return []  # the file's error is in the report


def run_convert(args: argparse.Namespace) -> int:
    args.in_place_like = bool(args.in_place)
    if (args.in_place or args.output_dir) and args.output:
        return fail("convert", "-o/--output prints to stdout; it cannot be combined with --in-place or --output-dir")
    if args.in_place and has_stdin(args.paths):
        return fail("convert", "--in-place needs file or directory paths, not stdin")
    to_files = bool(args.in_place or args.output_dir)
    if to_files:
        install_signal_cleanup()
    try:
        run = _start(args, stream=not to_files)
    except UsageError as exc:
        return fail("convert", str(exc))
    writer: StdoutWriter | JsonWriter = JsonWriter(sys.stdout) if args.output == "json" else StdoutWriter(sys.stdout)
    # Written files of a unit wait for its templates file (a workload is never written referencing a
    # template that could not be written), and, when kustomization roots are verified, for the render
    # check. Printed output is one stream, and goes out as it comes.
    verifying = to_files and run.verifies_renders()
    held: dict[Path | None, list[FileResult]] = {}
    for result in run.results():
        if to_files and result.changed and result.has_errors:
            # a file with an error stays as it was: untouched in place, copied as it was to --output-dir
            run.withdraw([result], "it has errors (see above), and a file is converted whole or not at all")
            _emit(run, FileResult(result.source, result.original, result.original), writer)
            continue
        unit = run.unit_of.get(result.source.path) if to_files and result.source.path is not None else None
        if result.changed and (unit is not None or (verifying and result.source.path is not None)):
            held.setdefault(unit, []).append(result)
        else:
            _emit(run, result, writer)
    ready: list[FileResult] = []  # templates files first: a crash between writes leaves no dangling reference
    for unit, template_results in run.template_units():
        waiting = held.pop(unit, [])
        failed = next((r for r in template_results if r.has_errors), None)
        if failed is not None:
            where = failed.source.display
            run.withdraw(waiting, f"the templates it would reference go to {where}, which could not be written")
            continue
        ready[:0] = template_results
        ready.extend(waiting)
    for waiting in held.values():  # units whose templates were all in place already, and files of no unit
        ready.extend(waiting)
    run.complete_patches(ready)
    if verifying:
        ready = _verified(run, ready)
    for result in ready:
        if run.templates_path is not None and result.source.path == run.templates_path:
            if result.changed:  # the templates file is written where it was named, in every mode
                _write(run, result, run.templates_path)
        else:
            _emit(run, result, writer)
    writer.finish()
    if args.output_dir:
        _copy_unselected(args)
    if args.device_classes:
        classes = run.device_classes_file()
        classes_path = classes.source.path
        if classes.changed and classes.error is None and classes_path is not None:
            _write(run, classes, classes_path)
    reported = run.reporter.finish()
    return EXIT_ERROR if run.any_errors or not reported else EXIT_OK


def _changes(results: Iterable[FileResult]) -> dict[Path, str]:
    return {r.source.path.resolve(): r.text for r in results if r.changed and r.source.path is not None}


def _verified(run: Run, ready: list[FileResult]) -> list[FileResult]:
    """The files to write once every kustomization root they feed renders the same devices."""
    failed = run.failed_renders(_changes(ready))
    if not failed:
        return ready
    keep: list[FileResult] = []
    withdrawn: list[FileResult] = []
    for result in ready:
        path = result.source.path.resolve() if result.source.path is not None else None
        blocked = path is not None and any(check.covers(run.index, path) for check in failed)
        (withdrawn if blocked else keep).append(result)
    run.withdraw(withdrawn, "a kustomization that renders it would give its pods other devices (render-mismatch)")
    return keep


def _chain(first: Iterable[FileResult], then: Any) -> Iterator[FileResult]:
    yield from first
    yield from then()


def run_diff(args: argparse.Namespace) -> int:
    args.in_place_like = True
    args.templates_file = None
    try:
        run = _start(args, stream=has_stdin(args.paths))
    except UsageError as exc:
        return fail("diff", str(exc))
    colour = use_colour(sys.stdout)
    changes = False
    # Over kustomizations, patches are completed from their bases and renders verified before the
    # diff is printed: changed files are held. Otherwise each diff goes out as it comes.
    holding = bool(run.index.known())
    changed: list[FileResult] = []
    for result in _chain(run.results(), run.template_files):
        if result.changed:
            changes = True
            if holding:
                changed.append(result)
            else:
                _write_diff(result.source.display, result.original, result.text, colour)
    if holding:
        run.complete_patches(changed)
        for result in changed:
            _write_diff(result.source.display, result.original, result.text, colour)
        if run.verifies_renders():
            run.failed_renders(_changes(changed))
    if args.device_classes:
        classes = run.device_classes_file()
        if classes.changed:
            changes = True
            _write_diff(classes.source.display, classes.original, classes.text, colour)
    reported = run.reporter.finish()
    if run.any_errors or not reported:
        return EXIT_ERROR
    # a chart that requests devices needs the migration too, through the post-renderer
    return EXIT_CHANGES if changes or run.charts else EXIT_OK


def _write_diff(name: str, before: str, after: str, colour: bool) -> None:
    import difflib  # only `diff` needs it

    lines = difflib.unified_diff(_diff_lines(before), _diff_lines(after), f"a/{name}", f"b/{name}")
    sys.stdout.writelines(_coloured(line) for line in lines) if colour else sys.stdout.writelines(lines)


def _coloured(line: str) -> str:
    if line.startswith(("+++", "---")):
        return paint(line.rstrip("\n"), "bold", True) + "\n"
    colour = {"+": "info", "-": "error", "@": "warning"}.get(line[:1])
    if colour is None:
        return line
    return paint(line.rstrip("\n"), colour, True) + "\n"


def _diff_lines(text: str) -> list[str]:
    """Lines for difflib, marking a missing final newline the way git and diff(1) do."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
