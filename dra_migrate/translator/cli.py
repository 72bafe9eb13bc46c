"""Arguments of `dra-migrate convert` and `dra-migrate diff` (argparse only: the work loads on demand)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dra_migrate.subcommands import Subcommands

from dra_migrate.translator.results.formats import REPORT_KINDS

OUTPUT_FORMATS = ("yaml", "json")
PLACEMENTS = ("kustomization", "per-file")


def output_format(value: str) -> str:
    """`-o` takes a format, as in kubectl; a directory is never guessed from it."""
    if value in OUTPUT_FORMATS:
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r} is not an output format (yaml or json); to write a tree use --output-dir {value}"
    )


def _positive(value: str, unit: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number{unit}")
    return number


def _size(value: str) -> int:
    return _positive(value, " of MiB") * 1024 * 1024


def _jobs(value: str) -> int:
    return _positive(value, "")


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; - or nothing reads stdin")
    parser.add_argument("--config", metavar="FILE", help="mapping and policy file (default: built-in mapping)")
    parser.add_argument(
        "--target-version", metavar="X.Y", help="Kubernetes release to write for (default: the --cluster's, else 1.34)"
    )
    from dra_migrate.planning.cli import cluster_arguments  # argparse only

    cluster_arguments(parser)
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
        metavar="PATTERN",
        help="in directories, read files matching PATTERN (gitignore syntax, any letter case; "
        "default *.yaml *.yml *.json); repeatable",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="skip matching files and directories (gitignore syntax: `legacy` skips every directory or file "
        "of that name, `overlays/prod` that path under the directory argument); repeatable",
    )
    parser.add_argument(
        "--report",
        choices=REPORT_KINDS,
        help="details on stderr, or in --report-file: text (default on a terminal), json, sarif (GitHub code "
        "scanning), junit (GitLab and Jenkins test reports), github (workflow annotations), markdown (a job "
        "summary or merge-request comment), or none (default in a pipe); every finding names its file and line; "
        "errors and a one-line summary are always printed, except that a report other than text on stderr is the "
        "whole of stderr",
    )
    parser.add_argument(
        "--report-file",
        metavar="PATH",
        help="write the report to PATH instead of stderr; without --report its format follows the extension: "
        ".sarif or .sarif.json sarif, .json json, .xml junit, .md markdown, anything else text",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only: no warnings, summary, progress")
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        metavar="N",
        help="convert files in N worker processes (default: the CPUs this process may use); output is the same",
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        help="check every output object against the target's OpenAPI schema, DNS names and CEL selectors; "
        "each problem is an error (schema when the conversion introduced it, schema-input when the input had it)",
    )
    parser.add_argument(
        "--template-placement",
        choices=PLACEMENTS,
        help="where generated ResourceClaimTemplates go in a tree: kustomization (default: a "
        "dra-migrate-templates.yaml added to the resources of the kustomization.yaml that lists the file; "
        "elsewhere into the file itself) or per-file (into each file that needs them)",
    )
    parser.add_argument(
        "--no-verify-render",
        dest="verify_render",
        action="store_false",
        help="do not build kustomization roots with kustomize before and after converting them (by default "
        "every root of the repository that renders from a changed file is built: one whose render is not the "
        "conversion of its render before, or that cannot be built, is an error and none of its files is "
        "written); the summary says how many roots were written unverified",
    )
    parser.add_argument(
        "--repository",
        metavar="DIR",
        help="the repository whose kustomization roots are verified (default: the git work tree holding the "
        "paths, else their common directory); every root that renders from a changed file is built",
    )
    parser.add_argument(
        "--enable-exec",
        action="store_true",
        help="let render verification run exec KRM functions and plugins (kustomize --enable-alpha-plugins "
        "--enable-exec); a root that needs them is otherwise refused",
    )
    parser.add_argument(
        "--max-file-size",
        type=_size,
        default=64 * 1024 * 1024,
        metavar="MIB",
        help="refuse input files larger than this (default 64)",
    )


def register(subcommands: Subcommands) -> None:
    subcommands.add_command(
        "convert",
        _convert_arguments,
        help="rewrite manifests to DRA",
        description="Rewrite device-plugin requests and old "
        "resource.k8s.io versions in manifests. Exit 0 on success, 2 when anything could not be converted.",
    )
    subcommands.add_command(
        "diff",
        _diff_arguments,
        help="preview what convert would change (exit 0 none, 1 changes, 2 errors)",
        description="Unified diff of what `convert --in-place` would change. Exit 0 nothing to change, "
        "1 changes needed, 2 errors.",
    )
    subcommands.add_command(
        "krm",
        _krm_arguments,
        help="run as a KRM function: ResourceList on stdin, converted on stdout (kustomize, kpt, Argo CD)",
        description="Read a ResourceList (config.kubernetes.io/v1) on stdin and write it converted on stdout, "
        "with the generated ResourceClaimTemplates among its items and the findings as results. "
        "functionConfig (optional): a ConfigMap with data.targetVersion, data.validate and data.config.",
    )


def _convert_arguments(convert: argparse.ArgumentParser) -> None:
    _common_arguments(convert)
    convert.add_argument(
        "-o",
        "--output",
        type=output_format,
        metavar="FORMAT",
        help="print to stdout as yaml (YAML files' own text, edited, and JSON files as YAML) or json (one object "
        "or a v1 List); default: each file's own text, edited",
    )
    where = convert.add_mutually_exclusive_group()
    where.add_argument("--output-dir", metavar="DIR", help="write the converted tree under DIR")
    where.add_argument("--in-place", action="store_true", help="rewrite changed files in place (atomically)")
    convert.add_argument(
        "--templates-file",
        metavar="PATH",
        help="write all generated ResourceClaimTemplates to PATH (merged with the templates already there) "
        "instead of next to the workloads",
    )
    convert.set_defaults(handler=_run_convert)


def _diff_arguments(diff: argparse.ArgumentParser) -> None:
    _common_arguments(diff)
    diff.set_defaults(handler=_run_diff)


def _krm_arguments(krm: argparse.ArgumentParser) -> None:
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
