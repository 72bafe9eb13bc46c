"""Render verification, the contract of a repository conversion: every kustomization root that
renders from a changed file (translator.renders.graph) is built by the real kustomize before and after the
conversion, and what it renders after must be what converting its render before gives
(translator.renders.renderdiff), object for object. A root that cannot be built is refused as well: no
kustomize, `helmCharts` without helm, an exec KRM function the user did not let it run
(`--enable-exec`), a container function, a remote base. Roots under the directory arguments whose
files did not change are built once, and must already render their conversion.

The converted tree is never written for this: the repository (and any kustomization outside it that
a root renders from) is copied to a temporary directory, files linked rather than copied where the
file system allows, the converted texts are laid over the copy, and kustomize builds it there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from dra_migrate.engine import Config
from dra_migrate.translator.renders.devices import compare, device_view
from dra_migrate.translator.renders.graph import RepositoryGraph
from dra_migrate.translator.renders.kustomize import Kustomization
from dra_migrate.translator.renders.render import BuildFlags, Renderer, RenderError, build, find_helm

NOT_VERIFIED_HINT = (
    "fix what stops it, leave its files out of the run (--exclude), or pass --no-verify-render to write "
    "without verifying"
)
MISMATCH, NOT_BUILT = "render-mismatch", "render-not-built"


class RootCheck(NamedTuple):
    kustomization: Kustomization
    problems: list[str]  # none: it renders the conversion of what it rendered before
    not_built: str | None = None  # an unchanged root kustomize could not build (a warning only)
    rule: str = MISMATCH  # NOT_BUILT: a root that renders from a changed file could not be built

    @property
    def failed(self) -> bool:
        return bool(self.problems)


class Verification(NamedTuple):
    """What a run asks of render verification."""

    renderer: Renderer | None
    config: Config
    graph: RepositoryGraph
    # kustomizations among the inputs (not excluded): those under the directory arguments are checked even
    # when none of their files changed
    inputs: Sequence[Kustomization]
    arguments: Sequence[Path]  # resolved directory arguments
    jobs: int = 1
    enable_exec: bool = False  # run exec KRM functions (kustomize --enable-alpha-plugins --enable-exec)


def roots_to_check(check: Verification, changes: Mapping[Path, str]) -> tuple[list[Kustomization], list[Kustomization]]:
    """(roots that render from a changed file, unchanged roots under the directory arguments)."""
    changed = check.graph.roots_rendering(changes)
    idle = [
        root
        for root in check.inputs
        if root not in changed
        and root.data.get("kind") != "Component"
        and any(root.directory.is_relative_to(a) for a in check.arguments)
    ]
    return changed, idle


def verify(check: Verification, changes: Mapping[Path, str], elsewhere: Sequence[Any] = ()) -> list[RootCheck]:
    """Build each root with and without `changes` (resolved path -> new text) and compare. `elsewhere`:
    templates the conversion writes outside the tree (--templates-file), applied beside every render."""
    changed, idle = roots_to_check(check, changes)
    checks: list[RootCheck] = []
    to_build: list[tuple[Kustomization, BuildFlags, bool]] = []
    helm = find_helm()
    for root, is_changed in [*((r, True) for r in changed), *((r, False) for r in idle)]:
        chain = [check.graph.index.read(d) for d in check.graph.directories_of(root)]
        kustomizations = [k for k in chain if k is not None]
        refusal = _unbuildable(check, kustomizations, changes, helm) if is_changed else None
        if refusal is not None:
            checks.append(RootCheck(root, [refusal], rule=NOT_BUILT))
        elif check.renderer is not None:
            uses_helm = any(k.data.get("helmCharts") for k in kustomizations)
            flags = BuildFlags(helm=helm if uses_helm else None, enable_exec=check.enable_exec)
            to_build.append((root, flags, is_changed))
    if check.renderer is None or not to_build:
        return checks
    renderer = check.renderer
    copied = sorted({check.graph.top, *(d for r, _, _ in to_build for d in check.graph.directories_of(r))})
    common = Path(os.path.commonpath(copied))
    with tempfile.TemporaryDirectory(prefix="dra-migrate-render-") as scratch:
        tree = Path(scratch) / "tree"
        try:
            _lay_out(copied, common, tree, changes)
        except OSError as exc:
            reason = f"cannot copy the repository to render it: {exc.strerror or exc}"
            return checks + [
                RootCheck(root, [reason] if is_changed else [], None if is_changed else reason, NOT_BUILT)
                for root, _, is_changed in to_build
            ]

        def one(item: tuple[Kustomization, BuildFlags, bool]) -> RootCheck:
            root, flags, is_changed = item
            converted = tree / root.directory.relative_to(common) if is_changed else None
            return _check(renderer, flags, check.config, root, converted, elsewhere, tree)

        with ThreadPoolExecutor(max_workers=max(1, check.jobs)) as pool:  # each build is a process
            checks.extend(pool.map(one, to_build))
    return checks


def _unbuildable(
    check: Verification, chain: Sequence[Kustomization], changes: Mapping[Path, str], helm: str | None
) -> str | None:
    """Why a root that renders from a changed file cannot be verified, known before building it."""
    remote = [entry for k in chain for entry in k.remote]
    if remote:
        patched = any(k.rewritten is not None or any(p in k.patches for p in changes) for k in chain)
        if patched:
            return (
                f"its patches of device requests apply to {', '.join(remote)}, a remote base not converted with "
                "it: convert that base where it lives first, or convert the rendered output (dra-migrate krm, the "
                "Helm post-renderer)"
            )
        return f"it renders from {', '.join(remote)}, a remote base verification does not fetch: {NOT_VERIFIED_HINT}"
    if check.renderer is None:
        return f"no kustomize or kubectl found to build it (set DRA_MIGRATE_KUSTOMIZE): {NOT_VERIFIED_HINT}"
    if helm is None and any(k.data.get("helmCharts") for k in chain):
        return f"it inflates helmCharts and no helm was found on PATH to build it: {NOT_VERIFIED_HINT}"
    return None


def _lay_out(directories: Sequence[Path], common: Path, tree: Path, changes: Mapping[Path, str]) -> None:
    """The directories copied where they are relative to each other (an overlay's `../base` finds its
    base; links kept as links), files linked where the file system allows, the converted texts laid
    over them as new files (never written through a link to the original)."""
    outermost = [d for d in directories if not any(d != other and d.is_relative_to(other) for other in directories)]
    for directory in outermost:
        shutil.copytree(
            directory,
            tree / directory.relative_to(common),
            symlinks=True,
            ignore=shutil.ignore_patterns(".git"),
            copy_function=_link_or_copy,
            dirs_exist_ok=True,
        )
    for path, text in changes.items():
        if any(path.is_relative_to(d) for d in outermost):
            target = tree / path.relative_to(common)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)  # a link to the original file must not be written through
            target.write_text(text, encoding="utf-8", newline="")


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, target)


def _check(
    renderer: Renderer,
    flags: BuildFlags,
    config: Config,
    root: Kustomization,
    converted: Path | None,
    elsewhere: Sequence[Any],
    tree: Path,
) -> RootCheck:
    """`converted`: where the converted tree holds the root; None when nothing it renders from changed
    (its render must then already be what converting it gives)."""
    try:
        before = build(renderer, root.directory, flags)
    except RenderError as exc:
        reason = f"kustomize cannot build it before the conversion: {_explained(exc, flags)}"
        if converted is None:
            return RootCheck(root, [], reason)
        return RootCheck(root, [f"{reason}; {NOT_VERIFIED_HINT}"], rule=NOT_BUILT)
    try:
        after = build(renderer, converted, flags) if converted is not None else before
    except RenderError as exc:
        if str(tree.parent) in str(exc):  # it reads a file the copy lacks: one outside the repository
            where = str(exc).replace(str(tree.parent), "...")
            return RootCheck(root, [f"it reads files outside the repository ({where}): name it with --repository"])
        return RootCheck(root, [f"kustomize cannot build it after the conversion: {exc}"])
    rendered = [*after, *elsewhere]
    from dra_migrate.translator.renders.renderdiff import conversion_differences

    differences = conversion_differences(before, rendered, config)
    if not differences:
        return RootCheck(root, [])
    # the per-container device counts say it plainest; the exact differences where they agree
    return RootCheck(root, compare(device_view(before, config), device_view(rendered, config)) or differences)


def _explained(exc: RenderError, flags: BuildFlags) -> str:
    message = str(exc)
    if "external plugin" in message and not flags.enable_exec:
        return f"{message} (it runs a KRM function or plugin, which verification runs only with --enable-exec)"
    return message
