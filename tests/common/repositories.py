"""Random kustomize repositories for the property that guards repository conversion, and its judge.

A repository is a GPU Deployment base (a main container, maybe a sidecar and an init container
asking for GPUs, maybe tolerations) under 0-3 overlay levels, each of which may patch the main
container's count (a strategic-merge file, `patchesStrategicMerge`, an inline patch, a patch by
`target`, a JSON 6902 file), add tolerations, set a namespace or a name prefix, or pull a component;
every kustomization file name kustomize reads is used, and dot-directories. The arguments are the
forms users and pre-commit pass: the top, a subdirectory, or any subset of the files.

The judge (`half_conversions`): after a run, every root of the repository renders either what it
rendered before (nothing of it was written) or the engine's conversion of that, object for object;
never a half conversion. Both renders come from the real kustomize.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from dra_migrate.engine import default_config
from dra_migrate.translator.renders.graph import RepositoryGraph
from dra_migrate.translator.renders.kustomize import KustomizationIndex
from dra_migrate.translator.renders.render import Renderer, RenderError, build
from dra_migrate.translator.renders.renderdiff import conversion_differences

FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


@dataclass
class Repository:
    files: dict[str, str] = field(default_factory=dict)
    arguments: list[str] = field(default_factory=list)  # relative to the top

    def write(self, top: Path) -> None:
        subprocess.run(["git", "init", "-q", str(top)], check=True)
        for name, text in self.files.items():
            path = top / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def _container(name: str, gpus: int | None) -> str:
    limits = f"\n        resources:\n          limits:\n            nvidia.com/gpu: {gpus}" if gpus is not None else ""
    return f"      - name: {name}\n        image: cuda{limits}\n"


def _deployment(main: int, side: int | None, init: int | None, tolerations: bool) -> str:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n"
        "  selector: {matchLabels: {app: app}}\n  template:\n    metadata: {labels: {app: app}}\n    spec:\n"
    )
    if tolerations:
        text += "      tolerations:\n      - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}\n"
    if init is not None:
        text += "      initContainers:\n" + _container("init", init)
    text += "      containers:\n" + _container("main", main)
    if side is not None:
        text += _container("side", side)
    return text


def _smp(count: int, tolerations: bool = False) -> str:
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n"
    if tolerations:
        text += "      tolerations:\n      - {key: team, operator: Exists, effect: NoSchedule}\n"
    return text + "      containers:\n" + _container("main", count)


_JSON6902 = (
    "- op: replace\n  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n  value: {count}\n"
)
_COMPONENT = (
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
    "commonAnnotations:\n  example.com/component: extra\n"
)
PATCH_FORMS = ("none", "file", "strategic-merge-list", "inline", "target", "json6902", "tolerations")


@st.composite
def repositories(draw: st.DrawFn) -> Repository:
    repo = Repository()
    name = draw(st.sampled_from(FILE_NAMES))
    main = draw(st.integers(1, 4))
    side = draw(st.none() | st.integers(0, 2))
    init = draw(st.none() | st.integers(0, 3))
    repo.files["base/" + name] = "resources:\n- deploy.yaml\n"
    repo.files["base/deploy.yaml"] = _deployment(main, side, init, draw(st.booleans()))
    if draw(st.booleans()):
        repo.files["components/extra/kustomization.yaml"] = _COMPONENT
    below = "base"
    for level in range(draw(st.integers(0, 3))):
        directory = draw(st.sampled_from([f"overlays/l{level}", f".deploy/l{level}"]))
        up = "../" * len(Path(directory).parts)
        lines = [f"resources:\n- {up}{below}\n"]
        form = draw(st.sampled_from(PATCH_FORMS))
        count = draw(st.integers(1, 4))
        if form == "file":
            repo.files[f"{directory}/gpus.yaml"] = _smp(count)
            lines.append("patches:\n- path: gpus.yaml\n")
        elif form == "strategic-merge-list":
            repo.files[f"{directory}/gpus.yaml"] = _smp(count)
            lines.append("patchesStrategicMerge:\n- gpus.yaml\n")
        elif form == "inline":
            patch = "".join(f"    {line}\n" for line in _smp(count).splitlines())
            lines.append(f"patches:\n- patch: |-\n{patch}")
        elif form == "target":
            repo.files[f"{directory}/gpus.yaml"] = _smp(count).replace("name: app", "name: not-app")
            lines.append("patches:\n- path: gpus.yaml\n  target:\n    kind: Deployment\n    name: app\n")
        elif form == "json6902":
            repo.files[f"{directory}/gpus.json6902.yaml"] = _JSON6902.format(count=count)
            lines.append(
                "patches:\n- path: gpus.json6902.yaml\n  target:\n    group: apps\n    version: v1\n"
                "    kind: Deployment\n    name: app\n"
            )
        elif form == "tolerations":
            repo.files[f"{directory}/tolerations.yaml"] = _smp(count, tolerations=True)
            lines.append("patches:\n- path: tolerations.yaml\n")
        if draw(st.booleans()):
            lines.append("namespace: ml\n")
        if "components/extra/kustomization.yaml" in repo.files and draw(st.booleans()):
            lines.append(f"components:\n- {up}components/extra\n")
        repo.files[f"{directory}/" + draw(st.sampled_from(FILE_NAMES))] = "".join(lines)
        below = directory
    files = sorted(repo.files)
    repo.arguments = draw(
        st.sampled_from([["."], ["base"], ["base/deploy.yaml"]])
        | st.lists(st.sampled_from(files), min_size=1, max_size=len(files), unique=True)
    )
    return repo


def renders(renderer: Renderer, top: Path) -> dict[Path, list[Any] | None]:
    """Every root of the repository and what kustomize renders for it (None: it does not build)."""
    graph = RepositoryGraph(KustomizationIndex(), top.resolve())
    out: dict[Path, list[Any] | None] = {}
    for root in graph.roots():
        try:
            out[root.directory.relative_to(top.resolve())] = build(renderer, root.directory)
        except RenderError:
            out[root.directory.relative_to(top.resolve())] = None
    return out


def half_conversions(before: dict[Path, list[Any] | None], after: dict[Path, list[Any] | None]) -> list[str]:
    """Roots whose render after a run is neither what it was nor the conversion of what it was."""
    config = default_config()
    problems = []
    for root, rendered in before.items():
        now = after.get(root)
        if rendered is None or now == rendered:
            continue
        if now is None:
            problems.append(f"{root}: built before the run, not after")
            continue
        differences = conversion_differences(rendered, now, config)
        if differences:
            problems.append(f"{root}: {differences[:3]}")
    return problems
