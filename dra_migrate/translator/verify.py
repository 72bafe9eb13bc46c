"""Render verification: every kustomization root among the inputs is built by the real kustomize
before and after the conversion, and what it renders after must be what converting its render before
gives (translator.renderdiff), object for object; a root whose files did not change is built once
and must already render that.

The converted tree is never written for this: the directory arguments are copied to a temporary
directory, where they stand relative to each other as they do in the tree, the converted texts are
laid over the copy, and kustomize builds both. A root that reaches files outside the directory
arguments cannot be built in the copy, and is refused like a root whose render changed: an overlay is
converted only together with its base.
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
    A root that renders from outside the inputs is refused whether or not a renderer is at hand."""
    bases = sorted(set(arguments))
    checks: list[RootCheck] = []
    to_build: list[Kustomization] = []
    for root in roots_under(index, bases):
        directories = render_directories(index, root)
        outside = sorted(str(d) for d in directories if not any(d.is_relative_to(b) for b in bases))
        if outside and not any(p.is_relative_to(d) for p in changes for d in directories):
            continue  # it renders from elsewhere too, and none of its files changed
        if outside:
            problem = f"it renders from {', '.join(outside)}, outside the inputs: convert it together with its base"
            checks.append(RootCheck(root, [problem]))
        else:
            to_build.append(root)
    if renderer is None or not to_build:
        return checks
    common = Path(os.path.commonpath(bases))
    with tempfile.TemporaryDirectory(prefix="dra-migrate-render-") as scratch:
        tree = Path(scratch) / "tree"
        try:
            _lay_out(bases, common, tree, changes)
        except OSError as exc:
            reason = f"cannot copy the inputs to render them: {exc.strerror or exc}"
            return checks + [RootCheck(root, [], reason) for root in to_build]
        for root in to_build:
            directories = render_directories(index, root)
            changed = any(p.is_relative_to(d) for p in changes for d in directories)
            converted = tree / root.directory.relative_to(common) if changed else None
            checks.append(_check(renderer, config, root, converted, elsewhere))
        return checks


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
    renderer: Renderer, config: Config, root: Kustomization, converted: Path | None, elsewhere: Sequence[Any]
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
        return RootCheck(root, [f"kustomize cannot build it after the conversion: {exc}"])
    rendered = [*after, *elsewhere]
    differences = conversion_differences(before, rendered, config)
    if not differences:
        return RootCheck(root, [])
    # the per-container device counts say it plainest; the exact differences where they agree
    return RootCheck(root, compare(device_view(before, config), device_view(rendered, config)) or differences)
