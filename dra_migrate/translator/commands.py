"""`dra-migrate convert` and `dra-migrate diff`: the offline translator's command line.

A run (translator.driver) converts the inputs file by file; then the files it writes besides them
are merged (translator.sidefiles), overlays are completed and every kustomization root's render is
verified (translator.repository), and only what holds together is written (translator.writing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dra_migrate.engine import ConfigError, Target, TargetVersionError
from dra_migrate.exits import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, fail
from dra_migrate.manifests.atomicwrite import install_signal_cleanup
from dra_migrate.translator.conversion.pipeline import FileResult
from dra_migrate.translator.driver import Run, UsageError
from dra_migrate.translator.reading.sources import has_stdin
from dra_migrate.translator.renders.kustomize import Kustomization
from dra_migrate.translator.results.output import JsonWriter, StdoutWriter
from dra_migrate.translator.results.report import paint, use_colour
from dra_migrate.translator.writing import copy_unselected, emit, output_path_problem, write


def _placement(args: argparse.Namespace, stream: bool) -> str:
    if getattr(args, "templates_file", None):
        return "single"
    if stream:
        return "stream"
    return str(args.template_placement or "kustomization")


def _start(args: argparse.Namespace, stream: bool) -> Run:
    problem = output_path_problem(args)
    if problem is not None:
        raise UsageError(problem)
    try:
        if args.target_version is not None:  # '' is a mistake, not the default
            Target.parse(args.target_version)
    except TargetVersionError as exc:
        raise UsageError(f"--target-version: {exc}") from exc
    try:
        return Run(args, _placement(args, stream))
    except (ConfigError, TargetVersionError) as exc:
        raise UsageError(f"config: {exc}") from exc


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
    verifying = to_files and run.repository.holds_writes()
    held: dict[Path | None, list[FileResult]] = {}
    broken: dict[Path, str] = {}  # unit -> a file of it that has errors: nothing of the unit is written
    for result in run.results():
        if to_files and result.changed and result.has_errors:
            # a file with an error stays as it was: untouched in place, copied as it was to --output-dir
            run.withdraw([result], "it has errors (see above), and a file is converted whole or not at all")
            emit(run, FileResult(result.source, result.original, result.original), writer)
            if result.source.path is not None and result.source.path in run.side.unit_of:
                broken.setdefault(run.side.unit_of[result.source.path], result.source.display)
            continue
        unit = run.side.unit_of.get(result.source.path) if to_files and result.source.path is not None else None
        if result.changed and (unit is not None or (verifying and result.source.path is not None)):
            held.setdefault(unit, []).append(result)
        else:
            emit(run, result, writer)
    ready: list[FileResult] = []  # templates files first: a crash between writes leaves no dangling reference
    for unit, template_results in run.side.template_units():
        waiting = held.pop(unit, [])
        if unit in broken:
            why = f"{broken[unit]}, whose templates it would hold, has errors: a unit is written whole or not at all"
            run.withdraw([*template_results, *waiting], why)
            _keep_as_it_was(run, waiting, writer)
            continue
        failed = next((r for r in template_results if r.has_errors), None)
        if failed is not None:
            where = failed.source.display
            run.withdraw(waiting, f"the templates it would reference go to {where}, which could not be written")
            _keep_as_it_was(run, waiting, writer)
            continue
        ready[:0] = template_results
        ready.extend(waiting)
    for waiting in held.values():  # units whose templates were all in place already, and files of no unit
        ready.extend(waiting)
    run.repository.complete_patches(ready)
    if verifying:
        ready = _verified(run, ready, writer)
    elif to_files:
        run.repository.say_not_verified(_changes(ready))
    for result in ready:
        if run.side.templates_path is not None and result.source.path == run.side.templates_path:
            if result.changed:  # the templates file is written where it was named, in every mode
                write(run, result, run.side.templates_path)
        else:
            emit(run, result, writer)
    writer.finish()
    if args.output_dir:
        copy_unselected(args)
    if args.device_classes:
        classes = run.side.device_classes_file()
        classes_path = classes.source.path
        if classes.changed and classes.error is None and classes_path is not None:
            write(run, classes, classes_path)
    reported = run.reporter.finish()
    return EXIT_ERROR if run.any_errors or not reported else EXIT_OK


def _changes(results: Iterable[FileResult]) -> dict[Path, str]:
    return {r.source.path.resolve(): r.text for r in results if r.changed and r.source.path is not None}


def _verified(run: Run, ready: list[FileResult], writer: StdoutWriter | JsonWriter | None = None) -> list[FileResult]:
    """The files to write once every kustomization root they render into is verified. A refused root
    withholds exactly the files that render into it, and so on through the graph: a root that renders
    from a withheld file would render half a conversion, so its files are withheld too."""
    failed = run.repository.failed_roots(_changes(ready))
    if not failed:
        return ready
    graph = run.repository.graph
    paths = {id(r): r.source.path.resolve() for r in ready if r.source.path is not None}
    blocking: dict[Path, Kustomization] = {c.kustomization.path: c.kustomization for c in failed}
    withheld: set[Path] = set()
    while True:
        reached = set().union(*(graph.renders_from(k) for k in blocking.values()))
        withheld = {p for p in paths.values() if p in reached}
        more = [k for k in graph.roots_rendering(withheld) if k.path not in blocking]
        if not more:
            break
        blocking.update((k.path, k) for k in more)
    keep: list[FileResult] = []
    withdrawn: list[FileResult] = []
    for result in ready:
        (withdrawn if paths.get(id(result)) in withheld else keep).append(result)
    keep, withdrawn = _single_templates_file(run, keep, withdrawn)
    why = "a kustomization that renders it cannot be converted whole (its render-mismatch or patch-not-converted)"
    run.withdraw(withdrawn, why)
    if writer is not None:
        _keep_as_it_was(run, withdrawn, writer)
    return keep


def _single_templates_file(
    run: Run, keep: list[FileResult], withdrawn: list[FileResult]
) -> tuple[list[FileResult], list[FileResult]]:
    """--templates-file is withheld with the last file that needs it: a refused run creates none."""
    path = run.side.templates_path
    if path is None or any(run.side.unit_of.get(r.source.path) == path for r in keep if r.source.path is not None):
        return keep, withdrawn
    held = [r for r in keep if r.source.path == path]
    return [r for r in keep if r.source.path != path], [*withdrawn, *held]


def _keep_as_it_was(run: Run, results: Iterable[FileResult], writer: StdoutWriter | JsonWriter) -> None:
    """--output-dir holds every input file: one that is not converted is copied as it was."""
    if not run.args.output_dir:
        return
    for result in results:
        path = result.source.path
        if path is not None and path.is_file() and path != run.side.templates_path:
            emit(run, FileResult(result.source, result.original, result.original), writer)


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
    holding = bool(run.index.known()) or run.repository.has_roots()
    changed: list[FileResult] = []
    for result in _chain(run.results(), run.side.template_files):
        if result.changed:
            changes = True
            if holding:
                changed.append(result)
            else:
                _write_diff(result.source.display, result.original, result.text, colour)
    if holding:
        run.repository.complete_patches(changed)
        if run.repository.holds_writes():
            # what convert would not write (a root whose render is not its conversion) is no change
            changed = _verified(run, changed)
        else:
            run.repository.say_not_verified(_changes(changed))
        for result in changed:
            _write_diff(result.source.display, result.original, result.text, colour)
    if args.device_classes:
        classes = run.side.device_classes_file()
        if classes.changed:
            changes = True
            _write_diff(classes.source.display, classes.original, classes.text, colour)
    reported = run.reporter.finish()
    if run.any_errors or not reported:
        return EXIT_ERROR
    # a chart that requests devices needs the migration too, through the post-renderer
    return EXIT_CHANGES if changes or run.repository.charts else EXIT_OK


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
