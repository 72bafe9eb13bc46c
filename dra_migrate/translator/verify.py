"""Render verification: every kustomization root among the inputs is built by the real kustomize
before and after the conversion, and the devices each rendered container can use must not change.

The converted tree is never written for this: each directory argument is copied to a temporary
directory, the converted texts are laid over the copy, and kustomize builds both. A root that
reaches files outside its directory argument cannot be built in the copy, and is refused like a
root whose render changed: an overlay is converted only together with its base.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dra_migrate.engine import Config
from dra_migrate.translator.devices import compare, device_view
from dra_migrate.translator.kustomize import Kustomization, KustomizationIndex
from dra_migrate.translator.render import Renderer, RenderError, build


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
        if not any(p.is_relative_to(d) for p in changes for d in directories):
            continue  # nothing it renders from changed
        outside = sorted(str(d) for d in directories if not any(d.is_relative_to(b) for b in bases))
        if outside:
            problem = f"it renders from {', '.join(outside)}, outside the inputs: convert it together with its base"
            checks.append(RootCheck(root, [problem]))
        else:
            to_build.append(root)
    if renderer is None or not to_build:
        return checks
    with tempfile.TemporaryDirectory(prefix="dra-migrate-render-") as scratch:
        copies = {base: Path(scratch) / str(number) for number, base in enumerate(bases)}
        try:
            _lay_out(copies, changes)
        except OSError as exc:
            reason = f"cannot copy the inputs to render them: {exc.strerror or exc}"
            return checks + [RootCheck(root, [], reason) for root in to_build]
        for root in to_build:
            base = next(b for b in bases if root.directory.is_relative_to(b))
            converted = copies[base] / root.directory.relative_to(base)
            checks.append(_check(renderer, config, root, converted, elsewhere))
        return checks


def _lay_out(copies: Mapping[Path, Path], changes: Mapping[Path, str]) -> None:
    """Each directory argument copied (links kept as links: a link back into the tree is no loop),
    with the converted texts laid over it."""
    for base, copy in copies.items():
        shutil.copytree(base, copy, symlinks=True)
    for path, text in changes.items():
        holder = next((b for b in copies if path.is_relative_to(b)), None)
        if holder is not None:
            target = copies[holder] / path.relative_to(holder)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")


def _check(
    renderer: Renderer, config: Config, root: Kustomization, converted: Path, elsewhere: Sequence[Any]
) -> RootCheck:
    try:
        before = build(renderer, root.directory)
    except RenderError as exc:
        return RootCheck(root, [], str(exc))
    try:
        after = build(renderer, converted)
    except RenderError as exc:
        return RootCheck(root, [f"kustomize cannot build it after the conversion: {exc}"])
    return RootCheck(root, compare(device_view(before, config), device_view([*after, *elsewhere], config)))
