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


class Repository:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.charts: set[Path] = set()  # Helm charts that request mapped devices (helm-chart warnings)

    def note_chart(self, result: FileResult) -> None:
        """A skipped file of a Helm chart that requests mapped devices: the chart needs the post-renderer."""
        from dra_migrate.translator.charts import POST_RENDERER, chart_root, requested_devices

        assert result.source.path is not None
        devices = requested_devices(result.original, self.run.options.config)
        root = chart_root(result.source.path, result.source.root) if devices else None
        if root is None or root in self.charts:
            return
        self.charts.add(root)
        message = (
            f"the Helm chart {display_path(root)} requests {', '.join(devices)}: what it installs depends on its "
            f"values, so convert its rendered manifests with {POST_RENDERER}"
        )
        result.file_findings.append(Finding(Severity.WARNING, "helm-chart", "", message))

    def complete_patches(self, results: Iterable[FileResult]) -> None:
        """Converted strategic-merge patches get their base's other claims (translator.overlays)."""
        from dra_migrate.translator.overlays import base_claims, complete_patch

        changed = {r.source.path.resolve(): r for r in results if r.changed and r.source.path is not None}
        for kustomization in self.run.index.known():
            patches = [changed[p] for p in sorted(kustomization.patches) if p in changed]
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

    def _display(self, found: Path) -> str:
        """A resolved path as the user would name it, under the directory argument that holds it."""
        for typed in self.run.paths:
            if typed != "-":
                source = self.run.names.source(found, Path(typed))
                if source.root is not None:
                    return source.display
        return display_path(found)

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
                message = f"`{renderer.label} build` renders the same devices for every container before and after"
                self.run.reporter.add_about(where, Finding(Severity.INFO, "render-verified", "", message))
        failed = [c for c in checks if c.failed]
        self.run.any_errors |= bool(failed)
        return failed
