"""Files a run writes besides its inputs, and which inputs wait for them.

Generated ResourceClaimTemplates go to a kustomization's `dra-migrate-templates.yaml` (added to its
`resources:`) or to --templates-file; DeviceClasses left to KEP-5004 go to --device-classes. Each such
file is merged into what it holds, never replaced (translator.conversion.placement), and an input whose templates
go to one is written only once that file can be (`unit_of`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra_migrate.engine import Finding, Severity, build_device_class, convert
from dra_migrate.manifests.yamltext import kubeyaml
from dra_migrate.translator.conversion.pipeline import FileResult
from dra_migrate.translator.conversion.placement import add_resource, merge_device_classes, merge_templates
from dra_migrate.translator.conversion.registry import TemplateKey, template_key
from dra_migrate.translator.reading.inputs import InputTooLargeError, newline_of, read_file
from dra_migrate.translator.reading.sources import Source, display_path
from dra_migrate.translator.renders.kustomize import TEMPLATES_FILE, Kustomization

if TYPE_CHECKING:
    from dra_migrate.translator.driver import Run


class SideFiles:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.needs: dict[Path, list[dict[str, Any]]] = {}  # kustomization file -> templates its files need
        # kustomization file -> the directory argument it was found under (None: found from a named file)
        self.roots: dict[Path, Path | None] = {}
        self.templates: list[dict[str, Any]] = []  # for --templates-file
        self.templates_path = Path(run.args.templates_file) if run.placement == "single" else None
        # input file -> the file its templates go to: the input is written only once that file can be
        self.unit_of: dict[Path, Path] = {}

    def settle(self, result: FileResult, owner: Kustomization | None) -> FileResult:
        """Templates that go to a kustomization's templates file or to --templates-file: they are
        counted in the report where they land (that file's result), not here."""
        source = result.source
        if owner is not None and result.templates:
            self.needs.setdefault(owner.path, []).extend(result.templates)
            self.roots.setdefault(owner.path, source.root)
            self._hold(source, owner.path)
            result.templates = []
        elif self.run.placement == "single":
            if result.templates:
                assert self.templates_path is not None
                self._hold(source, self.templates_path)
            self.templates.extend(result.templates)
            result.templates = []
        return result

    def add_kustomization_edit(self, path: Path, root: Path | None, templates: list[dict[str, Any]]) -> None:
        """A kustomization whose inline patches were rewritten (`Kustomization.rewritten`): it is
        written with the templates they need, as one unit."""
        self.needs.setdefault(path, []).extend(templates)
        self.roots.setdefault(path, root)

    def _hold(self, source: Source, unit: Path) -> None:
        if source.path is not None:
            self.unit_of[source.path] = unit

    def template_units(self) -> Iterator[tuple[Path, list[FileResult]]]:
        """Files the run writes besides the inputs, by the unit (`unit_of`) whose inputs need them:
        --templates-file, or a kustomization's templates file and the kustomization itself."""
        if self.run.placement == "single":
            path = self.templates_path
            assert path is not None
            yield path, [self._merged_file(Source(path, Path(path.name)), self.templates)]
        for path, templates in self.needs.items():
            yield path, list(self._kustomization_files(path, templates))

    def template_files(self) -> Iterator[FileResult]:
        for _, results in self.template_units():
            yield from results

    def _merged_file(
        self, source: Source, templates: list[dict[str, Any]], notes: list[Finding] | None = None, newline: str = "\n"
    ) -> FileResult:
        existing = self._existing(source, "templates")
        if isinstance(existing, FileResult):
            return existing
        merged = merge_templates(existing, templates, newline)
        result = FileResult(source, existing, merged.text, templates_inline=merged.added)
        result.error = merged.error
        result.file_findings.extend(Finding(Severity.ERROR, "template-conflict", "", c) for c in merged.conflicts)
        result.file_findings.extend(notes or ())
        self.run.record(result)
        return result

    def _kustomization_files(self, path: Path, templates: list[dict[str, Any]]) -> Iterator[FileResult]:
        kustomization = self.run.index.at(path.parent)
        assert kustomization is not None
        root = self.roots[path]
        elsewhere: set[TemplateKey] = set()
        for other in self.run.index.reachable(kustomization):
            elsewhere.update(template_key(t) for t in self.needs.get(other.path, ()))
            for listed in other.files:
                elsewhere.update(self.run.existing.get(listed, ()))
        for listed in kustomization.files:
            if listed.name != TEMPLATES_FILE:
                elsewhere.update(self.run.existing.get(listed, ()))
        placed = [t for t in templates if template_key(t) not in elsewhere]
        text = kustomization.rewritten or kustomization.text
        if placed:
            templates_file = self.run.names.source(kustomization.directory / TEMPLATES_FILE, root)
            notes = self._rename_warnings(kustomization)
            templates_result = self._merged_file(templates_file, placed, notes, newline_of(kustomization.text))
            yield templates_result
            if templates_result.error is not None:
                return
            data = kustomization.data if kustomization.rewritten is None else kubeyaml.load(text)
            text = add_resource(text, data, TEMPLATES_FILE) or text
        if text != kustomization.text:
            source = self.run.names.source(kustomization.path, root)
            result = FileResult(source, kustomization.text, text)
            if kustomization.encoding != "utf-8":  # rewritten in UTF-8 it would change every byte
                result.error = (
                    f"is encoded as {kustomization.encoding}: dra-migrate edits kustomization files in UTF-8 only "
                    f"(it would add {TEMPLATES_FILE} to its resources); convert the file to UTF-8 first"
                )
            if kustomization.rewritten is not None:
                message = "inline JSON 6902 operations on device requests rewritten to claims"
                result.file_findings.append(Finding(Severity.INFO, "json-patch-converted", "", message))
            self.run.record(result)
            yield result

    def _rename_warnings(self, kustomization: Kustomization) -> list[Finding]:
        """namePrefix/nameSuffix rename the templates but not the pods' references to them."""
        renaming = [kustomization] if kustomization.renames else []
        renaming += [k for k in self.run.index.known() if k.renames and kustomization in self.run.index.reachable(k)]
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

    def _existing(self, source: Source, what: str) -> str | FileResult:
        """The text a file the run merges into already holds ("" when there is none), or, when it cannot
        be read, its recorded error result (nothing is then written to it)."""
        assert source.path is not None
        try:
            return read_file(source.path, self.run.limit) if source.path.exists() else ""
        except (OSError, UnicodeDecodeError, InputTooLargeError) as exc:
            result = FileResult(source, "", "")
            result.error = f"cannot read, {what} not written: {getattr(exc, 'strerror', None) or exc}"
            self.run.record(result)
            return result

    def device_classes_file(self) -> FileResult:
        """The --device-classes file with a DeviceClass for every name left to KEP-5004 in this run,
        in the target's version, merged into what the file holds (its other objects and comments kept)."""
        path = Path(self.run.args.device_classes)
        source = Source(path, Path(path.name))
        existing = self._existing(source, "DeviceClasses")
        if isinstance(existing, FileResult):
            return existing
        merged = merge_device_classes(existing, self._device_classes())
        result = FileResult(source, existing, merged.text)
        result.error = merged.error
        result.file_findings.extend(Finding(Severity.WARNING, "device-class-kept", "", c) for c in merged.conflicts)
        self.run.record(result)
        return result

    def _device_classes(self) -> list[dict[str, Any]]:
        documents = []
        for resource in sorted(self.run.extended):
            device_class = build_device_class(self.run.extended[resource])
            written = convert(device_class, self.run.options.config)
            name = device_class["metadata"]["name"]
            for finding in written.problems:
                # A class the target cannot hold is not written: the report says why.
                self.run.reporter.add_run(
                    Finding(finding.severity, finding.rule, finding.path, f"DeviceClass {name}: {finding.message}")
                )
            self.run.any_errors |= written.has_errors
            if written.object is not None and not written.has_errors:
                documents.append(written.object)
        return documents
