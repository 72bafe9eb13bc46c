"""Where a run's results go: back into the inputs (--in-place), a mirror tree (--output-dir) or
stdout; a write that fails is the file's error, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dra_migrate.manifests.atomicwrite import write_atomic, write_bytes_atomic
from dra_migrate.manifests.yamltext import kubeyaml
from dra_migrate.translator.conversion.pipeline import FileResult
from dra_migrate.translator.reading.sources import Source, unselected
from dra_migrate.translator.results.output import JsonWriter, StdoutWriter

if TYPE_CHECKING:
    from dra_migrate.translator.driver import Run


def output_path_problem(args: argparse.Namespace) -> str | None:
    """What makes a named output impossible before anything is converted (never a traceback later)."""
    output_dir = getattr(args, "output_dir", None)
    if output_dir and Path(output_dir).exists() and not Path(output_dir).is_dir():
        return f"--output-dir {output_dir} is a file, not a directory"
    if output_dir:
        output = Path(output_dir).resolve()
        for typed in getattr(args, "paths", None) or ():
            if typed != "-" and Path(typed).is_dir() and output.is_relative_to(Path(typed).resolve()):
                # its copies would overwrite the inputs, or be read as inputs by the next run
                return f"--output-dir {output_dir} is inside the input directory {typed}: name a directory outside it"
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


def write(run: Run, result: FileResult, target: Path, durable: bool = True, mode: int | None = None) -> None:
    """The result's text to `target`; a write that fails (a read-only directory, a path that is a
    file) is the file's error, not a traceback."""
    try:
        write_atomic(target, result.text, durable, mode)
    except OSError as exc:
        where = exc.filename or result.source.display
        run.withdraw([result], f"cannot write {where}: {exc.strerror or exc}")


def emit(run: Run, result: FileResult, writer: StdoutWriter | JsonWriter) -> None:
    args = run.args
    path = result.source.path
    if args.in_place:
        if result.changed and result.error is None and path is not None:
            # write through a symbolic link to the file it points at: the link stays a link
            write(run, result, path.resolve())
    elif args.output_dir:
        target = Path(args.output_dir) / result.source.relative
        if not result.original and (result.error is not None or result.skipped is not None):
            # unreadable as text, or empty: the bytes as they are (an empty file stays), never a placeholder
            _copy_as_is(result.source, target)
        elif result.skipped is None or result.text:
            write(run, result, target, durable=False, mode=_mode(result.source))
    elif isinstance(writer, JsonWriter):
        writer.add(_output_objects(result))
    elif args.output == "yaml" and result.source.is_json and result.error is None:
        # a JSON input asked for as YAML: its objects written as YAML documents
        writer.write("".join(f"---\n{kubeyaml.dump(obj)}" for obj in _output_objects(result)))
    else:
        writer.write(result.text)


def _copy_as_is(source: Source, target: Path) -> None:
    if source.path is not None and source.path.is_file():
        with contextlib.suppress(OSError):  # the read error is in the report already
            write_bytes_atomic(target, source.path.read_bytes(), mode=_mode(source))


def _mode(source: Source) -> int | None:
    """The source file's permissions, for its copy in an output tree (an exec KRM function stays executable)."""
    try:
        return source.path.stat().st_mode & 0o777 if source.path is not None else None
    except OSError:
        return None


def copy_unselected(args: argparse.Namespace) -> None:
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
