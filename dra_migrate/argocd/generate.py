"""The plugin's two commands, as the Argo CD sidecar runs them in the application's directory.

`init` fetches a chart's missing dependencies (its output is not read as manifests); `generate`
renders the source and pipes the render through `dra-migrate convert`, printing the converted
stream only when every step succeeded. Argo CD shows a failing command's stderr in the UI, so
each step's own messages go there as they come, followed by one line saying which step failed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from dra_migrate.argocd.environment import Application, PluginError, cluster_minor, env_entry, read_application
from dra_migrate.argocd.source import (
    has_objects,
    helm_template_command,
    manifest_files,
    missing_dependencies,
    repository_file,
    source_kind,
)
from dra_migrate.exits import EXIT_OK, fail

HELM_VARIABLE = "DRA_MIGRATE_HELM"
# Set by whoever runs the sidecar, like Argo CD's kustomize.buildOptions (`--enable-helm`): options that
# let a build run programs are the operator's choice, not an application's.
KUSTOMIZE_OPTIONS_VARIABLE = "DRA_MIGRATE_KUSTOMIZE_BUILD_OPTIONS"


def run_init(environ: Mapping[str, str], app_dir: Path) -> int:
    try:
        if source_kind(app_dir) == "helm":
            missing = missing_dependencies(app_dir)
            if missing:
                print(f"fetching chart dependencies: {', '.join(missing)}", file=sys.stderr, flush=True)
                # stdout to stderr too: init's output is not manifests, and nothing of it should look like them
                _run([_helm(environ), "dependency", "build", "."], app_dir, environ, stdout=sys.stderr)
    except PluginError as exc:
        return fail("argocd-cmp init", str(exc))
    return EXIT_OK


def run_generate(environ: Mapping[str, str], app_dir: Path, out: TextIO) -> int:
    try:
        app = read_application(environ)
        arguments = _convert_arguments(app, app_dir)
        render, inputs = _render(app, app_dir, environ)
        converted = _run([sys.executable, "-m", "dra_migrate", *arguments, *inputs], app_dir, environ, stdin=render)
    except PluginError as exc:
        return fail("argocd-cmp generate", str(exc))
    out.write(converted)
    out.flush()
    return EXIT_OK


def _render(app: Application, app_dir: Path, environ: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """What convert reads: a kustomize or helm render on stdin, or a plain directory's files by name."""
    kind = source_kind(app_dir)
    if kind == "directory":
        inputs = ["."] if app.settings.recurse else manifest_files(app_dir)
        if not inputs:
            raise PluginError(_empty("the directory holds no .yaml, .yml or .json file"))
        return None, inputs
    command = _kustomize(environ) if kind == "kustomize" else helm_template_command(_helm(environ), app, app_dir)
    render = _run(command, app_dir, environ)
    if not has_objects(render):
        raise PluginError(_empty(f"{_label(command)} rendered no object"))
    return render, ["-"]


def _empty(what: str) -> str:
    # Argo CD prunes what a render no longer holds: an empty render would delete the application.
    return f"{what}; an empty render is refused, since Argo CD would prune every object of the application"


def _convert_arguments(app: Application, app_dir: Path) -> list[str]:
    arguments = ["convert", "--report", "text", "-o", "yaml"]
    target = _target_version(app)
    if target is not None:
        arguments += ["--target-version", target]
    if app.settings.config:
        arguments += ["--config", str(repository_file(app, app_dir, app.settings.config, "config"))]
    if app.settings.validate:
        arguments.append("--validate")
    return arguments


def _target_version(app: Application) -> str | None:
    """The release to write for: the target-version setting, else the destination cluster's (KUBE_VERSION)."""
    from dra_migrate.engine import Target, TargetVersionError

    if app.settings.target_version:
        version, source, hint = app.settings.target_version, "target-version", ""
    else:
        minor = cluster_minor(app.kube_version)
        if minor is None:
            return None  # convert's default release
        version, source = minor, f"KUBE_VERSION {app.kube_version} (the destination cluster's)"
        hint = f"; to write for another release set the target-version parameter or {env_entry('target-version')} env"
    try:
        Target.parse(version)
    except TargetVersionError as exc:
        raise PluginError(f"{source}: {exc}{hint}") from exc
    return version


def _kustomize(environ: Mapping[str, str]) -> list[str]:
    import shlex

    from dra_migrate.translator.renders.render import ENVIRONMENT_VARIABLE, find_renderer

    renderer = find_renderer()
    if renderer is None:
        raise PluginError(
            f"kustomize not found: put kustomize or kubectl on PATH, or name it in {ENVIRONMENT_VARIABLE}"
        )
    try:
        options = shlex.split(environ.get(KUSTOMIZE_OPTIONS_VARIABLE, ""))
    except ValueError as exc:
        raise PluginError(f"{KUSTOMIZE_OPTIONS_VARIABLE}: {exc}") from exc
    return [*renderer.command, *options, "."]


def _helm(environ: Mapping[str, str]) -> str:
    found = environ.get(HELM_VARIABLE) or shutil.which("helm", path=environ.get("PATH"))
    if not found:
        raise PluginError(f"helm not found: put it on PATH, or name it in {HELM_VARIABLE}")
    return found


def _label(command: Sequence[str]) -> str:
    if command[0] == sys.executable:
        return "dra-migrate convert"
    return " ".join([Path(command[0]).name, *command[1:2]])


def _run(
    command: Sequence[str],
    cwd: Path,
    environ: Mapping[str, str],
    *,
    stdin: str | None = None,
    stdout: TextIO | None = None,
) -> str:
    """Run one step; its stderr passes through. Its stdout is returned, or written to `stdout` when given."""
    try:
        done = subprocess.run(
            list(command),
            cwd=cwd,
            env=dict(environ),
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            stdout=subprocess.PIPE,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise PluginError(f"{_label(command)} could not run: {exc}") from exc
    if stdout is not None:
        stdout.write(done.stdout)
        stdout.flush()
    if done.returncode != 0:
        raise PluginError(f"{_label(command)} failed (exit {done.returncode}); its messages are above")
    return done.stdout if stdout is None else ""
