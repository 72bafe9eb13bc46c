"""Running the real kustomize: which binary, and one `build` of a directory into objects.

`DRA_MIGRATE_KUSTOMIZE` names the binary (kustomize, or a kubectl, which runs `kubectl kustomize`);
else `kustomize` on PATH; else `kubectl kustomize` (the kustomize built into kubectl). The render is
what the cluster will receive, so it is the ground truth translator.renders.verify compares before and after
a conversion.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from dra_migrate.manifests.yamltext import kubeyaml

ENVIRONMENT_VARIABLE = "DRA_MIGRATE_KUSTOMIZE"
BUILD_TIMEOUT_S = 120
# A root may load a patch from a sibling directory when its users build it this way; verification
# renders what any of them can build (files outside the inputs still fail in the copy that is built).
LOAD_ANYTHING = ("--load-restrictor", "LoadRestrictionsNone")


class Renderer(NamedTuple):
    command: tuple[str, ...]  # the build command before the directory

    @property
    def label(self) -> str:
        return " ".join(self.command[:-1] if self.command[-1] == "build" else self.command)


class RenderError(Exception):
    pass


class BuildFlags(NamedTuple):
    """What a root needs kustomize to be allowed: helm for `helmCharts` (its path), KRM functions."""

    helm: str | None = None
    enable_exec: bool = False

    def arguments(self) -> tuple[str, ...]:
        helm = ("--enable-helm", "--helm-command", self.helm) if self.helm else ()
        return (*helm, *(("--enable-alpha-plugins", "--enable-exec") if self.enable_exec else ()))


PLAIN_BUILD = BuildFlags()
HELM_VARIABLE = "HELM"


def find_helm() -> str | None:
    """The helm `helmCharts` roots are built with: $HELM, else helm on PATH."""
    named = os.environ.get(HELM_VARIABLE)
    return named if named and Path(named).is_file() else shutil.which("helm")


def find_renderer() -> Renderer | None:
    named = os.environ.get(ENVIRONMENT_VARIABLE)
    if named:
        return Renderer((named, "kustomize" if Path(named).name.startswith("kubectl") else "build"))
    kustomize = shutil.which("kustomize")
    if kustomize:
        return Renderer((kustomize, "build"))
    kubectl = shutil.which("kubectl")
    if kubectl:
        return Renderer((kubectl, "kustomize"))
    return None


def _message(stderr: str) -> str:
    """kustomize's own words, without the log prefix kubectl puts before them (`E1126 ... run.go:72]
    "command failed" err="..."`)."""
    text = " ".join(stderr.split())
    found = re.search(r'err="(.*)"$', text)
    if found:
        text = found.group(1).replace('\\"', '"')
    return text[:500]


def build(renderer: Renderer, directory: Path, flags: BuildFlags = PLAIN_BUILD) -> list[Any]:
    """The objects `kustomize build DIRECTORY` renders; RenderError with kustomize's message."""
    import subprocess  # only runs over kustomizations build (it imports signal: a one-file run does not)

    try:
        done = subprocess.run(
            [*renderer.command, *LOAD_ANYTHING, *flags.arguments(), str(directory)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RenderError(f"{renderer.label} could not run: {exc}") from exc
    if done.returncode != 0:
        raise RenderError(_message(done.stderr) or f"exit {done.returncode}")
    try:
        return [d for d in kubeyaml.load_all(done.stdout) if isinstance(d, dict)]
    except (ValueError, yaml.YAMLError) as exc:  # kustomize writes YAML it can read; this is a broken binary
        raise RenderError(f"{renderer.label} wrote unreadable YAML: {exc}") from exc
