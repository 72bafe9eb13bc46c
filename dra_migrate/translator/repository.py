"""What a run checks across files, where users' repositories put them: kustomize overlays that
patch a converted base (translator.overlays), the render of every kustomization root before and
after (translator.verify), and Helm charts, whose rendered output the post-renderer converts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra_migrate.engine import Finding, Severity
from dra_migrate.translator.inputs import InputTooLargeError, read_file
from dra_migrate.translator.pipeline import FileResult
from dra_migrate.translator.render import find_renderer
from dra_migrate.translator.sources import display_path

if TYPE_CHECKING:
    from dra_migrate.translator.driver import Run
    from dra_migrate.translator.patchplan import PatchFile, PatchPlan


class Repository:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.charts: set[Path] = set()  # Helm charts that request mapped devices (helm-chart warnings)
        self.charts_read: set[Path] = set()
        self.patches = self._plan_patches()

    def _plan_patches(self) -> PatchPlan | None:
        """JSON 6902 patches and replacements over device requests, planned before conversion."""
        if self.run.placement == "stream" or not self.run.index.known():
            return None
        from dra_migrate.translator.patchplan import PatchPlan

        plan = PatchPlan(self.run.index, self.run.options.config, lambda path: read_file(path, self.run.limit))
        for problem in plan.problems:
            where = self._display(problem.file)
            self.run.reporter.add_about(where, Finding(Severity.ERROR, "patch-not-converted", "", problem.message))
        self.run.any_errors |= bool(plan.problems)
        for path, templates in plan.inline.items():
            root = self._argument_for(path)
            if root is not None:
                self.run.side.add_kustomization_edit(path, root, templates)
        return plan

    def patch_file(self, path: Path) -> PatchFile | None:
        """The DRA form of a JSON 6902 patch file, when the plan rewrote it (the path is resolved only
        when the plan rewrote any: this is asked for every input)."""
        planned = self.patches.files if self.patches is not None else None
        return planned.get(path.resolve()) if planned else None

    def note_chart(self, result: FileResult) -> None:
        """A skipped file of a Helm chart that requests mapped devices: the chart needs the post-renderer."""
        from dra_migrate.translator.charts import chart_message, chart_root, requested_devices

        assert result.source.path is not None
        devices = requested_devices(result.original, self.run.options.config)
        root = chart_root(result.source.path, result.source.root) if devices else None
        if root is None or root in self.charts_read:
            return
        self.charts_read.add(root)  # the chart is read whole once (translator.charts)
        message = chart_message(root, display_path(root), self.run.options.config)
        if message is None:  # it names the devices only as toleration keys or in comments
            return
        self.charts.add(root)
        result.file_findings.append(Finding(Severity.WARNING, "helm-chart", "", message))

    def complete_patches(self, results: Iterable[FileResult]) -> None:
        """Converted strategic-merge patches get their base's other claims (translator.overlays)."""
        from dra_migrate.translator.overlays import base_claims, complete_patch

        changed = {r.source.path.resolve(): r for r in results if r.changed and r.source.path is not None}
        for kustomization in self.run.index.known():
            # those the plan rewrote against what they patch are complete already (translator.patchplan)
            patches = [changed[p] for p in sorted(kustomization.patches) if p in changed and not self.patch_file(p)]
            patches = [r for r in patches if "resourceClaims" in r.text]
            if not patches:
                continue
            resources: set[Path] = set()
            for k in (kustomization, *self.run.index.reachable(kustomization)):
                resources |= k.files - k.patches
            bases = base_claims((self._current_text(p, changed) for p in sorted(resources)), self.run.options.config)
            for result in patches:
                result.text = complete_patch(result.text, bases, self.run.options.config)

    def _current_text(self, path: Path, changed: dict[Path, FileResult]) -> str:
        if path in changed:
            return changed[path].text
        try:
            return read_file(path, self.run.limit)
        except (OSError, UnicodeDecodeError, InputTooLargeError):
            return ""  # its error is reported where the file is converted

    # -- render verification --------------------------------------------------------------

    def verifies_renders(self) -> bool:
        return bool(self.run.args.verify_render) and self.run.placement != "stream" and bool(self.run.index.known())

    def holds_writes(self) -> bool:
        """Whether written files wait for the check of every root they feed."""
        return self.verifies_renders() or bool(self.patches is not None and self.patches.problems)

    def failed_roots(self, changes: dict[Path, str]) -> list[Any]:
        """Roots that must not be written: those that render from a patch the plan could not convert
        (reported already), and, when renders are verified, those whose render changed."""
        from dra_migrate.translator.verify import RootCheck, render_directories

        failed = {p.parent for p in self.patches.failed()} if self.patches is not None else set()
        checks = [
            RootCheck(root, ["renders from a patch that cannot be converted (patch-not-converted)"])
            for root in self.run.index.known()
            if failed.intersection(render_directories(self.run.index, root))
        ]
        return checks + (self.failed_renders(changes) if self.verifies_renders() else [])

    def _display(self, found: Path) -> str:
        """A resolved path as the user would name it, under the directory argument that holds it."""
        root = self._argument_for(found)
        return self.run.names.source(found, root).display if root is not None else display_path(found)

    def _argument_for(self, found: Path) -> Path | None:
        """The directory argument, as typed, that holds a resolved path."""
        for typed in self.run.paths:
            if typed != "-" and self.run.names.source(found, Path(typed)).root is not None:
                return Path(typed)
        return None

    def failed_renders(self, changes: dict[Path, str]) -> list[Any]:
        """Build every kustomization root among the inputs before and after `changes` (resolved path ->
        text); report each, and return the roots whose render changed (translator.verify.RootCheck)."""
        from dra_migrate.translator.verify import verify  # only runs over kustomizations need it

        renderer = find_renderer()
        if renderer is None:  # an overlay given without its base is still refused
            message = "no kustomize or kubectl found: kustomization roots were not rendered to check the conversion"
            self.run.reporter.add_run(Finding(Severity.WARNING, "render-not-verified", "", message))
        arguments = [self.run.names.resolved(Path(p)) for p in self.run.paths if p != "-" and Path(p).is_dir()]
        extra = self.run.side.templates if self.run.placement == "single" else []
        checks = verify(renderer, self.run.options.config, self.run.index, arguments, changes, extra)
        for check in checks:
            where = self._display(check.kustomization.path)
            for problem in check.problems:
                self.run.reporter.add_about(where, Finding(Severity.ERROR, "render-mismatch", "", problem))
            if check.not_built is not None:
                message = f"not verified: kustomize cannot build it before the conversion: {check.not_built}"
                self.run.reporter.add_about(where, Finding(Severity.WARNING, "render-not-verified", "", message))
            elif not check.failed and renderer is not None:
                message = f"`{renderer.label}` renders the conversion of what it rendered before"
                self.run.reporter.add_about(where, Finding(Severity.INFO, "render-verified", "", message))
        failed = [c for c in checks if c.failed]
        self.run.any_errors |= bool(failed)
        return failed
