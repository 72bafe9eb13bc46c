"""Render verification: every kustomization root among the inputs is built by the real kustomize
before and after the conversion, and what it renders after must be what converting its render before
gives (translator.renderdiff), object for object; a root whose files did not change is built once
and must already render that.

The converted tree is never written for this: the directory arguments (and the kustomizations
outside them that a root renders from) are copied to a temporary directory, where they stand relative
to each other as they do in the tree, the converted texts are laid over the copy, and kustomize
builds both. An overlay converted without its base renders other than its conversion, and says that
its base is outside the inputs; a root that reads other files outside them cannot be built in the
copy, and is refused saying so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dra_migrate.engine import Config
from dra_migrate.translator.devices import compare, device_view
from dra_migrate.translator.kustomize import Kustomization, KustomizationIndex
from dra_migrate.translator.render import Renderer, RenderError, build
from dra_migrate.translator.renderdiff import conversion_differences


class RootCheck(NamedTuple):
    kustomization: Kustomization
    problems: list[str]  # none: the render kept every container's devices
    not_built: str | None = None  # kustomize could not build the root before the conversion

    @property
    def failed(self) -> bool:
        return bool(self.problems)


def render_directories(index: KustomizationIndex, root: Kustomization) -> list[Path]:
    return [root.directory, *(k.directory for k in index.reachable(root))]


def roots_under(index: KustomizationIndex, arguments: Iterable[Path]) -> list[Kustomization]:
    """Kustomizations (not components: they do not build alone) inside the resolved directory arguments."""
    bases = list(arguments)
    return sorted(
        (
            k
            for k in index.known()
            if k.data.get("kind") != "Component" and any(k.directory.is_relative_to(b) for b in bases)
        ),
        key=lambda k: k.path,
    )


def verify(
    renderer: Renderer | None,
    config: Config,
    index: KustomizationIndex,
    arguments: Iterable[Path],
    changes: Mapping[Path, str],
    elsewhere: Sequence[Any] = (),
) -> list[RootCheck]:
    """Build each root with and without `changes` (resolved path -> new text) and compare. `elsewhere`:
    templates the conversion writes outside the tree (--templates-file), applied beside every render.
    A root that renders from kustomizations outside the inputs is built with them copied as they are
    (a base holding only generators needs no conversion); without a renderer it is refused."""
    bases = sorted(set(arguments))
    checks: list[RootCheck] = []
    to_build: list[tuple[Kustomization, list[Path], bool]] = []  # root, outside the inputs, changed
    for root in roots_under(index, bases):
        directories = render_directories(index, root)
        remote = _patched_remote_base(index, root, changes)
        if remote is not None:
            checks.append(RootCheck(root, [remote]))
            continue
        outside = sorted(d for d in directories if not any(d.is_relative_to(b) for b in bases))
        changed = any(p.is_relative_to(d) for p in changes for d in directories)
        if outside and not changed:
            continue  # it renders from elsewhere too, and none of its files changed
        if outside and renderer is None:
            checks.append(RootCheck(root, [_outside_problem(outside)]))
        else:
            to_build.append((root, outside, changed))
    if renderer is None or not to_build:
        return checks
    copied = sorted(set(bases).union(*(outside for _, outside, _ in to_build)))
    common = Path(os.path.commonpath(copied))
    with tempfile.TemporaryDirectory(prefix="dra-migrate-render-") as scratch:
        tree = Path(scratch) / "tree"
        try:
            _lay_out(copied, common, tree, changes)
        except OSError as exc:
            reason = f"cannot copy the inputs to render them: {exc.strerror or exc}"
            return checks + [RootCheck(root, [], reason) for root, _, _ in to_build]
        for root, outside, changed in to_build:
            converted = tree / root.directory.relative_to(common) if changed else None
            check = _check(renderer, config, root, converted, elsewhere, tree)
            if check.failed and outside:  # most likely the base that was not converted with it
                check = RootCheck(root, [*check.problems, _outside_problem(outside)])
            checks.append(check)
        return checks


def _patched_remote_base(index: KustomizationIndex, root: Kustomization, changes: Mapping[Path, str]) -> str | None:
    """Why a root whose patches the conversion rewrote cannot be converted when it pulls a base from a
    repository or URL: that base is not converted with it, so the rewritten patches would give its pods
    claims beside their device-plugin requests (and the render cannot be checked without fetching it)."""
    chain = [root, *index.reachable(root)]
    remote = [entry for k in chain for entry in k.remote]
    patched = any(k.rewritten is not None or any(p in k.patches for p in changes) for k in chain)
    if not (remote and patched):
        return None
    return (
        f"its patches of device requests apply to {', '.join(remote)}, a remote base not converted with it: convert "
        "that base where it lives first, or convert the rendered output (dra-migrate krm, the Helm post-renderer)"
    )


def _outside_problem(outside: Sequence[Path]) -> str:
    return f"it renders from {', '.join(map(str, outside))}, outside the inputs: convert it together with its base"


def _lay_out(bases: Sequence[Path], common: Path, tree: Path, changes: Mapping[Path, str]) -> None:
    """The directory arguments copied where they are relative to each other (an overlay's `../base`
    finds its base; links kept as links: a link back into the tree is no loop), with the converted
    texts laid over them."""
    outermost = [b for b in bases if not any(b != other and b.is_relative_to(other) for other in bases)]
    for base in outermost:
        shutil.copytree(base, tree / base.relative_to(common), symlinks=True)
    for path, text in changes.items():
        if any(path.is_relative_to(b) for b in outermost):
            target = tree / path.relative_to(common)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")


def _check(
    renderer: Renderer,
    config: Config,
    root: Kustomization,
    converted: Path | None,
    elsewhere: Sequence[Any],
    tree: Path,
) -> RootCheck:
    """`converted`: where the converted tree holds the root; None when nothing it renders from changed
    (its render must then already be what converting it gives)."""
    try:
        before = build(renderer, root.directory)
    except RenderError as exc:
        return RootCheck(root, [], str(exc))
    try:
        after = build(renderer, converted) if converted is not None else before
    except RenderError as exc:
        if str(tree.parent) in str(exc):  # it reads a file the copy lacks: one outside the inputs
            where = str(exc).replace(str(tree.parent), "...")
            return RootCheck(root, [f"it reads files outside the inputs ({where}): convert it with what it reads"])
        return RootCheck(root, [f"kustomize cannot build it after the conversion: {exc}"])
    rendered = [*after, *elsewhere]
    differences = conversion_differences(before, rendered, config)
    if not differences:
        return RootCheck(root, [])
    # the per-container device counts say it plainest; the exact differences where they agree
    return RootCheck(root, compare(device_view(before, config), device_view(rendered, config)) or differences)
