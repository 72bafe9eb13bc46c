"""Arguments of `dra-migrate convert` and `dra-migrate diff` (argparse only: the work loads on demand)."""

from __future__ import annotations

import argparse
from typing import Any


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; - or nothing reads stdin")
    parser.add_argument("--config", metavar="FILE", help="mapping and policy file (default: built-in mapping)")
    parser.add_argument("--target-version", metavar="X.Y", help="Kubernetes release to write for (default 1.34)")
    parser.add_argument(
        "--strategy",
        choices=("auto", "claims", "extendedResource"),
        help="rewrite device-plugin requests into claims, leave them to DeviceClasses that map the name "
        "(KEP-5004), or auto: by the target's DRAExtendedResource default and the known classes (default: auto)",
    )
    parser.add_argument(
        "--device-classes",
        metavar="FILE",
        help="write a DeviceClass with spec.extendedResourceName for every name left to KEP-5004 to FILE "
        "(diff shows it); those names then count as served",
    )
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="in directories, read files matching GLOB (default *.yaml *.yml *.json); repeatable",
    )
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching files")
    parser.add_argument(
        "--report",
        choices=("text", "json", "none"),
        help="findings report on stderr (default: text on a terminal, none in a pipe)",
    )
    parser.add_argument("--report-file", metavar="PATH", help="write the report to PATH instead of stderr")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="convert files in N processes (default: the CPUs this process may use); output is the same",
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        help="check every output object against the target's OpenAPI schema; failures are errors",
    )


def register(subparsers: Any) -> None:
    convert = subparsers.add_parser(
        "convert",
        help="rewrite manifests to DRA",
        description="Rewrite device-plugin requests and old "
        "resource.k8s.io versions in manifests. Exit 0 on success, 2 when anything could not be converted.",
    )
    _common_arguments(convert)
    where = convert.add_mutually_exclusive_group()
    where.add_argument("-o", "--output-dir", metavar="DIR", help="write the converted tree under DIR")
    where.add_argument("--in-place", action="store_true", help="rewrite changed files in place (atomically)")
    convert.add_argument(
        "--templates-file",
        metavar="PATH",
        help="write all generated ResourceClaimTemplates to PATH instead of next to workloads",
    )
    convert.set_defaults(handler=_run_convert)

    diff = subparsers.add_parser(
        "diff",
        help="preview what convert would change (exit 0 none, 1 changes, 2 errors)",
        description="Unified diff of what `convert` would change. Exit 0 nothing to change, 1 changes "
        "needed, 2 errors.",
    )
    _common_arguments(diff)
    diff.set_defaults(handler=_run_diff)

    krm = subparsers.add_parser(
        "krm",
        help="run as a KRM function: ResourceList on stdin, converted on stdout (kustomize, kpt, Argo CD)",
        description="Read a ResourceList (config.kubernetes.io/v1) on stdin and write it converted on stdout, "
        "with the generated ResourceClaimTemplates among its items and the findings as results. "
        "functionConfig (optional): a ConfigMap with data.targetVersion, data.validate and data.config.",
    )
    krm.set_defaults(handler=_run_krm)


def _run_convert(args: argparse.Namespace) -> int:
    from dra_migrate.translator.commands import run_convert

    return run_convert(args)


def _run_diff(args: argparse.Namespace) -> int:
    from dra_migrate.translator.commands import run_diff

    return run_diff(args)


def _run_krm(args: argparse.Namespace) -> int:
    import sys

    from dra_migrate.translator.krm import run_krm

    return run_krm(sys.stdin, sys.stdout)
