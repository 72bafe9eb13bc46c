"""What a run checks across files, where users' repositories put them: kustomize overlays that
patch a converted base (translator.conversion.overlays), the render of every kustomization root before and
after (translator.renders.verify), and Helm charts, whose rendered output the post-renderer converts."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra_migrate.engine import Finding, Severity
from dra_migrate.translator.conversion.pipeline import FileResult
from dra_migrate.translator.reading.inputs import InputTooLargeError, read_file
from dra_migrate.translator.reading.sources import display_path
from dra_migrate.translator.renders.kustomize import FILE_NAMES
from dra_migrate.translator.renders.render import find_renderer

if TYPE_CHECKING:
    from dra_migrate.translator.conversion.patchplan import PatchFile, PatchPlan
    from dra_migrate.translator.driver import Run
    from dra_migrate.translator.renders.graph import RepositoryGraph
    from dra_migrate.translator.renders.kustomize import Kustomization


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
        from dra_migrate.translator.conversion.patchplan import PatchPlan

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
        from dra_migrate.translator.reading.charts import chart_message, chart_root, requested_devices

        assert result.source.path is not None
        devices = requested_devices(result.original, self.run.options.config)
        root = chart_root(result.source.path, result.source.root) if devices else None
        if root is None or root in self.charts_read:
            return
        self.charts_read.add(root)  # the chart is read whole once (translator.reading.charts)
        message = chart_message(root, display_path(root), self.run.options.config)
        if message is None:  # it names the devices only as toleration keys or in comments
            return
        self.charts.add(root)
        result.file_findings.append(Finding(Severity.WARNING, "helm-chart", "", message))

    def complete_patches(self, results: Iterable[FileResult]) -> None:
        """Converted strategic-merge patches get their base's other claims (translator.conversion.overlays)."""
        from dra_migrate.translator.conversion.overlays import base_claims, complete_patch

        changed = {r.source.path.resolve(): r for r in results if r.changed and r.source.path is not None}
        for kustomization in self.run.index.known():
            # those the plan rewrote against what they patch are complete already (translator.conversion.patchplan)
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

    @functools.cached_property
    def graph(self) -> RepositoryGraph:
        """Every kustomization of the repository the inputs belong to (translator.renders.graph)."""
        from dra_migrate.translator.renders.graph import RepositoryGraph

        assert self.run.top is not None, "a run over stdin alone has no repository"
        return RepositoryGraph(self.run.index, self.run.top)

    def verifies_renders(self) -> bool:
        return bool(self.run.args.verify_render) and self.run.placement != "stream" and self.has_roots()

    def has_roots(self) -> bool:
        return self.run.placement != "stream" and self.run.top is not None and bool(self.graph.roots())

    def holds_writes(self) -> bool:
        """Whether written files wait for the check of every root they feed."""
        return self.verifies_renders() or bool(self.patches is not None and self.patches.problems)

    def failed_roots(self, changes: dict[Path, str]) -> list[Any]:
        """Roots that must not be written: those that render from a patch the plan could not convert
        (reported already), and, when renders are verified, those whose render is not their conversion
        or that cannot be built."""
        from dra_migrate.translator.renders.verify import RootCheck

        failed = self.patches.failed() if self.patches is not None else set()
        checks = [
            RootCheck(root, ["renders from a patch that cannot be converted (patch-not-converted)"])
            for root in (self.graph.roots_rendering(failed) if failed else [])
        ]
        if self.verifies_renders():
            return checks + self.failed_renders(changes)
        self.say_not_verified(changes)
        return checks

    def say_not_verified(self, changes: dict[Path, str]) -> None:
        """--no-verify-render: the run says which roots it wrote without building them."""
        if self.run.args.verify_render or not changes or not self.has_roots():
            return
        roots = self.graph.roots_rendering(changes)
        if not roots:
            return
        names = ", ".join(self._display(r.path) for r in roots[:5]) + (", ..." if len(roots) > 5 else "")
        message = f"--no-verify-render: {len(roots)} kustomization roots render from changed files unverified ({names})"
        self.run.reporter.add_run(Finding(Severity.WARNING, "render-not-verified", "", message))
        self.run.reporter.summary.unverified = len(roots)

    def _unconverted_hint(self, root: Kustomization, changes: dict[Path, str]) -> list[str]:
        """The files of a refused root's render that name devices and were not converted with it: the
        usual cause (a base, or an overlay's patch, left out of the arguments)."""
        from dra_migrate.translator.reading.prefilter import prefilter_for

        prefilter = prefilter_for(self.run.options.config)
        left = []
        for path in sorted(self.graph.renders_from(root)):
            if path in changes or path.name in FILE_NAMES or not path.is_file():
                continue
            try:
                if prefilter.names_mapped(read_file(path, self.run.limit)):
                    left.append(self._display(path))
            except (OSError, UnicodeDecodeError, InputTooLargeError):
                continue
        if not left:
            return []
        return [f"it also renders from {', '.join(left)}, which name devices and were not converted: convert them too"]

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
        """Build every kustomization root that renders from `changes` (resolved path -> text) before and
        after them, and those under the directory arguments once; report each, and return the roots
        that must not be written (translator.renders.verify.RootCheck)."""
        # only runs over kustomizations need it
        from dra_migrate.translator.renders.verify import NOT_BUILT, Verification, verify

        arguments = [self.run.names.resolved(Path(p)) for p in self.run.paths if p != "-" and Path(p).is_dir()]
        check = Verification(
            renderer=find_renderer(),
            config=self.run.options.config,
            graph=self.graph,
            inputs=self.run.index.known(),
            arguments=arguments,
            jobs=self.run.jobs,
            enable_exec=bool(getattr(self.run.args, "enable_exec", False)),
        )
        extra = self.run.side.templates if self.run.placement == "single" else []
        checks = verify(check, changes, extra)
        for result in checks:
            where = self._display(result.kustomization.path)
            if result.failed and result.rule != NOT_BUILT:
                result.problems.extend(self._unconverted_hint(result.kustomization, changes))
            for problem in result.problems:
                refusal = (
                    Finding(Severity.ERROR, "render-not-built", "", problem)
                    if result.rule == NOT_BUILT
                    else Finding(Severity.ERROR, "render-mismatch", "", problem)
                )
                self.run.reporter.add_about(where, refusal)
            if result.not_built is not None:
                message = f"not verified: {result.not_built}"
                self.run.reporter.add_about(where, Finding(Severity.WARNING, "render-not-verified", "", message))
            elif not result.failed and check.renderer is not None:
                message = f"`{check.renderer.label}` renders the conversion of what it rendered before"
                self.run.reporter.add_about(where, Finding(Severity.INFO, "render-verified", "", message))
        failed = [c for c in checks if c.failed]
        self.run.any_errors |= bool(failed)
        return failed
