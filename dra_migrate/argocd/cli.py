"""`dra-migrate argocd-cmp init|generate`: arguments (argparse only; the work is in argocd.generate)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dra_migrate.subcommands import Subcommands


def register(subcommands: Subcommands) -> None:
    subcommands.add_command(
        "argocd-cmp",
        _arguments,
        help="the Argo CD config management plugin's commands (deploy/argocd-cmp)",
        description="Run by the plugin's sidecar in the application's directory, with Argo CD's ARGOCD_APP_*, "
        "ARGOCD_ENV_*, ARGOCD_APP_PARAMETERS and KUBE_VERSION variables. init fetches a Helm chart's missing "
        "dependencies; generate renders the directory (kustomize build, else helm template, else its manifests) "
        "and prints the render converted by `dra-migrate convert`. Exit 0, or 2 when a step failed (stderr says "
        "which).",
    )


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("step", choices=("init", "generate"), help="the plugin.yaml command being run")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import os
    import sys
    from pathlib import Path

    from dra_migrate.argocd.generate import run_generate, run_init

    if args.step == "init":
        return run_init(os.environ, Path.cwd())
    return run_generate(os.environ, Path.cwd(), sys.stdout)
