"""`dra-migrate convert` and `dra-migrate diff`: the offline translator's command line."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

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
from dra_migrate.translator.output import StdoutWriter, write_atomic
from dra_migrate.translator.pipeline import FileResult, RunOptions, dump_documents
from dra_migrate.translator.prefilter import documents_mentioning
from dra_migrate.translator.registry import TemplateRegistry
from dra_migrate.translator.report import JsonReport, Progress, RunSummary, file_entries, print_summary, run_entry
from dra_migrate.translator.runner import default_jobs, read_source, run_files
from dra_migrate.translator.sources import Source, discover, has_stdin


class UsageError(Exception):
    pass


_EXISTING_MARKERS = ("ResourceClaimTemplate", "extendedResourceName")


def _note_existing_templates(sources: Iterable[Source], stdin_text: str | None, registry: TemplateRegistry) -> None:
    """Templates already in the inputs are not emitted again; KEP-5004 DeviceClasses there are noted."""
    for source in sources:
        try:
            text = read_source(source, stdin_text)
        except (OSError, UnicodeDecodeError):
            continue
        if not any(marker in text for marker in _EXISTING_MARKERS):
            continue
        for document in documents_mentioning(text, _EXISTING_MARKERS):
            items = (
                document.get("items", [])
                if isinstance(document, dict) and document.get("kind") == "List"
                else [document]
            )
            for item in items:
                if isinstance(item, dict) and item.get("kind") == "ResourceClaimTemplate":
                    registry.note_existing(item)
                elif isinstance(item, dict) and item.get("kind") == "DeviceClass":
                    registry.note_device_class(item)


class Run:
    """Shared driver for convert and diff: config, sources, per-file processing and the report."""

    def __init__(self, args: argparse.Namespace, templates_inline: bool) -> None:
        config = load_config(args.config, args.target_version)
        if args.strategy:
            config = with_strategy(config, args.strategy)
        # Sources are walked lazily (twice: templates first), so memory does not grow with the tree.
        self._paths, self._include, self._exclude = args.paths, args.include, args.exclude
        self.stdin_text = sys.stdin.read() if has_stdin(args.paths) else None
        self.registry = TemplateRegistry()
        _note_existing_templates(self.sources(), self.stdin_text, self.registry)
        # DeviceClasses among the inputs map names for the migration strategy (KEP-5004).
        input_classes = serving_classes(self.registry.device_classes)
        config = with_served_classes(config, {name: classes[0] for name, classes in input_classes.items()})
        if args.device_classes:
            config = with_emitted_classes(config)
        self.options = RunOptions(
            config=config, input_classes=input_classes, templates_inline=templates_inline, validate=args.validate
        )
        self.extended: dict[str, DeviceRequestSpec] = {}
        self.summary = RunSummary()
        self.report_kind = args.report or ("text" if sys.stderr.isatty() else "none")
        self.report_file: str | None = args.report_file
        self.json_report = JsonReport(str(config.target))
        self.problems: list[dict[str, Any]] = []
        self.any_errors = False
        self.jobs: int = getattr(args, "jobs", None) or default_jobs()
        notice = config.target.notice
        if notice:
            self._note_run(Finding(Severity.WARNING, "target-not-released", "", notice))
        schema = None
        if args.validate:
            from dra_migrate.translator.schema import schema_notice  # the schemas load only for --validate

            schema = schema_notice(config.target)
        if schema:
            self._note_run(Finding(Severity.WARNING, "schema-fallback", "", schema))

    def _note_run(self, finding: Finding) -> None:
        row = run_entry(finding)
        self.summary.severities.update([row["severity"]])
        self.json_report.add_rows([row])
        self.problems.append(row)

    def device_classes_text(self) -> str:
        """The DeviceClasses for every name left to KEP-5004 in this run, in the target's version."""
        documents = []
        for resource in sorted(self.extended):
            written = convert(build_device_class(self.extended[resource]), self.options.config)
            if written.object is not None:
                documents.append(written.object)
        return dump_documents(documents)

    def sources(self) -> Iterator[Source]:
        return discover(self._paths, self._include, self._exclude)

    def results(self) -> Iterator[FileResult]:
        progress = Progress(sum(1 for _ in self.sources()) if sys.stderr.isatty() else 0)
        for result in run_files(self.sources(), self.stdin_text, self.registry, self.options, self.jobs):
            source = result.source
            self.extended.update(result.extended)
            self.summary.add(result, len(result.templates) + result.templates_inline)
            self.any_errors |= result.has_errors
            if self.report_kind == "json":
                self.json_report.add(result)
            elif self.report_kind == "text":
                self.problems.extend(r for r in file_entries(result) if r["severity"] in ("warning", "error"))
            progress.step(source.display)
            yield result
        progress.close()

    def finish(self) -> None:
        if self.report_kind == "none":
            return
        with ExitStack() as stack:
            stream: TextIO = (
                stack.enter_context(Path(self.report_file).open("w", encoding="utf-8"))
                if self.report_file
                else sys.stderr
            )
            if self.report_kind == "json":
                self.json_report.dump(stream, self.summary)
            else:
                print_summary(stream, self.summary, self.problems)


def _start(args: argparse.Namespace, templates_inline: bool) -> Run:
    try:
        return Run(args, templates_inline)
    except (ConfigError, TargetVersionError) as exc:
        raise UsageError(f"config: {exc}") from exc


def run_convert(args: argparse.Namespace) -> int:
    if args.in_place and has_stdin(args.paths):
        return fail("convert", "--in-place needs file or directory paths, not stdin")
    try:
        run = _start(args, templates_inline=args.templates_file is None)
    except UsageError as exc:
        return fail("convert", str(exc))
    stdout = StdoutWriter(sys.stdout)
    templates: list[dict[str, Any]] = []
    for result in run.results():
        templates.extend(result.templates)
        if args.in_place:
            if result.changed and result.error is None:
                assert result.source.path is not None
                write_atomic(result.source.path, result.text)
        elif args.output_dir:
            write_atomic(Path(args.output_dir) / result.source.relative, result.text, durable=False)
        else:
            stdout.write(result.text)
    if args.templates_file:
        write_atomic(Path(args.templates_file), dump_documents(templates))
    if args.device_classes:
        write_atomic(Path(args.device_classes), run.device_classes_text())
    run.finish()
    return EXIT_ERROR if run.any_errors else EXIT_OK


def run_diff(args: argparse.Namespace) -> int:
    try:
        run = _start(args, templates_inline=True)
    except UsageError as exc:
        return fail("diff", str(exc))
    changes = False
    for result in run.results():
        if result.changed:
            changes = True
            _write_diff(result.source.display, result.original, result.text)
    if args.device_classes:
        path = Path(args.device_classes)
        before = path.read_text(encoding="utf-8") if path.is_file() else ""
        after = run.device_classes_text()
        if after != before:
            changes = True
            _write_diff(args.device_classes, before, after)
    run.finish()
    if run.any_errors:
        return EXIT_ERROR
    return EXIT_CHANGES if changes else EXIT_OK


def _write_diff(name: str, before: str, after: str) -> None:
    sys.stdout.writelines(difflib.unified_diff(_diff_lines(before), _diff_lines(after), f"a/{name}", f"b/{name}"))


def _diff_lines(text: str) -> list[str]:
    """Lines for difflib, marking a missing final newline the way git and diff(1) do."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
