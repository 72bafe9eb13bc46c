"""One run of `convert` or `diff`: configuration, inputs, per-file conversion and the report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra_migrate.configfile import load_config
from dra_migrate.engine import (
    DeviceRequestSpec,
    Finding,
    Severity,
    serving_classes,
    with_emitted_classes,
    with_served_classes,
    with_strategy,
)
from dra_migrate.translator.conversion.pipeline import FileResult, RunOptions, place_templates, process
from dra_migrate.translator.conversion.registry import TemplateKey, TemplateRegistry, template_key
from dra_migrate.translator.conversion.trainjobs import Override, override_of, refuse_overridden
from dra_migrate.translator.reading import limits
from dra_migrate.translator.reading.charts import chart_template
from dra_migrate.translator.reading.inputs import InputTooLargeError, NotRegularFileError, read_file, read_stdin
from dra_migrate.translator.reading.naming import InputNames
from dra_migrate.translator.reading.prefilter import documents_mentioning
from dra_migrate.translator.reading.sources import Source, common_base, discover, has_stdin
from dra_migrate.translator.renders.kustomize import FILE_NAMES, Kustomization, KustomizationIndex
from dra_migrate.translator.repository import Repository
from dra_migrate.translator.results.report import Progress, Reporter
from dra_migrate.translator.runner import Work, default_jobs, read_error, run_files
from dra_migrate.translator.sidefiles import SideFiles

if TYPE_CHECKING:
    from dra_migrate.cluster.state import ClusterState
    from dra_migrate.translator.conversion.patchplan import PatchFile


class UsageError(Exception):
    pass


_EXISTING_MARKERS = ("ResourceClaimTemplate", "extendedResourceName", "resourcesPerNode")


def _objects(text: str) -> list[Any]:
    """Objects of the documents that can be a template, a KEP-5004 DeviceClass or a TrainJob overriding
    its runtime's resources (only those are loaded)."""
    if not any(marker in text for marker in _EXISTING_MARKERS):
        return []
    out: list[Any] = []
    for document in documents_mentioning(text, _EXISTING_MARKERS):
        is_list = isinstance(document, dict) and document.get("kind") == "List"
        items = document.get("items") if is_list else [document]
        out.extend(item for item in items if isinstance(items, list) and isinstance(item, dict))
    return out


def _cluster(args: argparse.Namespace) -> ClusterState | None:
    """The cluster a run converts for (--cluster snapshot or --kubeconfig), if one is named."""
    if getattr(args, "cluster", None) is None and getattr(args, "kubeconfig", None) is None:
        return None
    from dra_migrate.planning.command import ClusterSourceError, read_cluster

    try:
        return read_cluster(args)
    except ClusterSourceError as exc:
        raise UsageError(f"cluster: {exc}") from exc


class Run:
    """Shared driver for convert and diff: config, sources, per-file processing (the steps of
    translator.runner) and the report. What a run writes besides its inputs is `side`
    (translator.sidefiles); what it checks across files, `repository` (translator.repository).

    Template placement: `stream` (stdout: the stream is one unit), `single` (--templates-file),
    `per-file`, or `kustomization` (files a kustomization lists get a templates file beside it)."""

    def __init__(self, args: argparse.Namespace, placement: str) -> None:
        cluster = _cluster(args)
        target = args.target_version or (cluster.minor_release if cluster is not None else None)
        config = load_config(args.config, target)
        if cluster is not None:  # its DeviceClasses decide KEP-5004; the names it shares are never claimed
            from dra_migrate.cluster.knowledge import cluster_config, knowledge_gaps
            from dra_migrate.cluster.nodes import cluster_nodes

            config = cluster_config(cluster, config, args.consumable_shares)
            for gap in knowledge_gaps(cluster, cluster_nodes(cluster, config.mappings.resolve)):
                print(f"dra-migrate: warning: cluster: {gap}", file=sys.stderr)
        if args.strategy:
            config = with_strategy(config, args.strategy)
        # limits.MAX_DEPTH levels of nesting through recursive walks (Python 3.11 frames are cheap)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), limits.RECURSION_LIMIT))
        self.args = args
        self.placement = placement
        self.limit: int = args.max_file_size
        # Sources are walked lazily (twice: templates first), so memory does not grow with the tree.
        self.paths, self._include, self._exclude = args.paths, args.include, args.exclude
        if has_stdin(args.paths) and sys.stdin.isatty():
            raise UsageError("no input: name files or directories, or pipe manifests on stdin (-)")
        self.stdin_text = self._read_stdin() if has_stdin(args.paths) else None
        self._streams: dict[Path, str] = {}
        self.registry = TemplateRegistry()  # DeviceClasses; templates too for the stream and single placements
        self.names = InputNames(common_base(args.paths))
        self.index = KustomizationIndex(self.names)
        self.top = self._repository_top(args)
        self.existing: dict[Path, set[TemplateKey]] = {}  # templates each input file already holds
        self.trainjob_overrides: list[Override] = []
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
            from dra_migrate.manifests.schema import schema_notice  # the schemas load only for --validate

            schema = schema_notice(config.target)
        if schema:
            self.reporter.add_run(Finding(Severity.WARNING, "schema-fallback", "", schema))
        self.any_errors = False
        self._seen: dict[Path, str] = {}  # resolved path -> display, to convert a symlinked file once
        self.side = SideFiles(self)  # templates files, kustomization edits, --device-classes
        self.repository = Repository(self)  # overlays, render verification, Helm charts

    def _repository_top(self, args: argparse.Namespace) -> Path | None:
        """The repository the inputs belong to (translator.renders.graph); None for stdin alone."""
        from dra_migrate.translator.renders.graph import repository_top

        typed = [Path(p) for p in args.paths if p != "-"]
        if not typed:
            return None
        named = getattr(args, "repository", None)
        directories = [self.names.resolved(p if p.is_dir() else p.parent) for p in typed]
        return repository_top(directories, Path(named) if named else None)

    def owner_stop(self, source: Source) -> Path | None:
        """How far up a file's owning kustomization is looked for: its directory argument, or for a file
        named directly (the staged files pre-commit passes) the repository's top."""
        return source.root if source.root is not None else self.top

    def _read_stdin(self) -> str:
        try:
            return read_stdin(self.limit)
        except (InputTooLargeError, UnicodeDecodeError) as exc:
            raise UsageError(f"<stdin>: {exc}") from exc

    def sources(self) -> Iterator[Source]:
        return discover(self.paths, self._include, self._exclude)

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
            elif source.path is not None and source.root is None and self.top is not None:
                self.index.owner(source.path, self.top)  # a named file's kustomization is the run's too
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
                elif (override := override_of(obj)) is not None:
                    self.trainjob_overrides.append(override)  # translator.conversion.trainjobs

    def results(self) -> Iterator[FileResult]:
        total = sum(1 for _ in self.sources()) if self.reporter.progress_allowed and sys.stderr.isatty() else 0
        progress = Progress(total)
        found = False
        for result in run_files(self.sources(), self, self.jobs):
            found = True
            self.record(result)
            progress.step(result.source.display)
            yield result
        progress.close()
        directories = [p for p in self.paths if p != "-" and Path(p).is_dir()]
        if not found and directories:
            message = f"no YAML or JSON files in {', '.join(directories)} (nothing was converted)"
            self.reporter.add_run(Finding(Severity.WARNING, "no-manifests", "", message))

    def record(self, result: FileResult) -> None:
        if result.skipped is not None and result.original and result.source.path is not None:
            self.repository.note_chart(result)
        self.extended.update(result.extended)
        self.reporter.add(result)
        self.any_errors |= result.has_errors

    def _unit(self, source: Source) -> tuple[TemplateRegistry, RunOptions, Kustomization | None]:
        if self.placement in ("stream", "single"):
            return self.registry, self.options, None
        owner = None
        stop = self.owner_stop(source)
        if self.placement != "single" and source.path is not None and stop is not None:
            owner = self.index.owner(source.path, stop)
            # per-file: a patch file holds only the patch (kustomize refuses other documents in it)
            if self.placement == "per-file" and owner is not None and source.path.resolve() not in owner.patches:
                owner = None
        options = self.options._replace(templates_inline=owner is None)
        return self.registry.child(), options, owner

    # -- the steps of translator.runner ---------------------------------------------------

    def admit(self, source: Source) -> FileResult | None:
        """A file reached again through a symbolic link is converted once (in place it would be written
        twice); a Helm chart's template is skipped (record() points at the post-renderer)."""
        if source.path is not None and chart_template(source.path, source.root) is not None:
            try:
                text = self._read(source)
            except (OSError, UnicodeDecodeError, InputTooLargeError):
                text = ""
            result = FileResult(source, text, text)
            result.skipped = "a Helm chart's template: what it renders depends on the chart's values"
            return result
        if source.path is not None and self.args.in_place_like:
            real = source.path.resolve()
            if real in self._seen:
                result = FileResult(source, "", "")
                result.skipped = f"the same file as {self._seen[real]} (a symbolic link): converted once, through it"
                return result
            self._seen[real] = source.display
        return None

    def local(self, source: Source) -> bool:
        if source.path is None or source.is_json or source.path in self._streams or not source.path.is_file():
            return True
        if source.path.name in FILE_NAMES:  # read here: kustomize also reads one with a byte-order mark
            return True
        return self._patch_file(source) is not None  # its rewrite was planned here (translator.conversion.patchplan)

    def _patch_file(self, source: Source) -> PatchFile | None:
        return self.repository.patch_file(source.path) if source.path is not None else None

    def whole(self, source: Source) -> FileResult:
        try:
            text = self._read(source)
        except NotRegularFileError as exc:
            result = FileResult(source, "", "")
            result.skipped = f"{exc.strerror}: not read"
            return result
        except UnicodeDecodeError as exc:
            result = FileResult(source, "", "")
            if source.path is not None and self._bom_kustomization(source.path):
                result.skipped = "a kustomization file with a byte-order mark (no objects to convert)"
            else:
                result.error = read_error(exc)
            return result
        except (OSError, InputTooLargeError) as exc:
            result = FileResult(source, "", "")
            result.error = read_error(exc)
            return result
        registry, options, owner = self._unit(source)
        patch = self._patch_file(source)
        if patch is not None:
            result = FileResult(source, text, patch.text)
            result.templates = list(patch.templates)
            if patch.rule is not None:
                result.file_findings.append(Finding(Severity.INFO, patch.rule, "", patch.summary))
            return self.side.settle(result, owner)
        try:
            result = process(source, text, registry, options)
        except Exception as exc:  # one bad file must not stop a bulk run or leak a traceback
            result = FileResult(source, text, text)
            result.error = f"internal error, file left unchanged: {type(exc).__name__}: {exc}"
            return result
        refuse_overridden(result, self.trainjob_overrides)
        return self.side.settle(result, owner)

    def _bom_kustomization(self, path: Path) -> bool:
        """A kustomization kustomize reads though it is not plain UTF-8 (UTF-16, say)."""
        kustomization = self.index.read(path.parent) if path.name in FILE_NAMES else None
        return kustomization is not None and kustomization.path == path.resolve()

    def place(self, result: FileResult) -> FileResult:
        registry, options, owner = self._unit(result.source)
        refuse_overridden(result, self.trainjob_overrides)
        try:
            placed = place_templates(result, registry, options)
        except Exception as exc:  # as in whole(): the file is left unchanged and the run goes on
            placed = FileResult(result.source, result.original, result.original)
            placed.error = f"internal error, file left unchanged: {type(exc).__name__}: {exc}"
            return placed
        return self.side.settle(placed, owner)

    def withdraw(self, waiting: Iterable[FileResult], why: str) -> None:
        """Files of a unit that cannot be written whole are not written at all."""
        for result in waiting:
            self.reporter.add_file_finding(result, Finding(Severity.ERROR, "not-written", "", f"left unchanged: {why}"))
            self.any_errors = True
