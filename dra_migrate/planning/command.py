"""`dra-migrate plan` at the edges: read the cluster, build the plan, write the report and the manifests."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dra_migrate.cluster.state import ClusterState
from dra_migrate.engine import Config, ConfigError, Target, TargetVersionError
from dra_migrate.exits import EXIT_ERROR, EXIT_OK, fail


class ClusterSourceError(Exception):
    pass


def read_cluster(args: argparse.Namespace) -> ClusterState:
    """The cluster named by --cluster (a snapshot) or --kubeconfig/--context (live; the default)."""
    from dra_migrate.cluster.live import ClusterReadError, read_live
    from dra_migrate.cluster.snapshot import SnapshotError, read_snapshot

    try:
        if args.cluster is not None:
            if args.kubeconfig is not None:
                raise ClusterSourceError("--cluster and --kubeconfig name two clusters: give one")
            return read_snapshot(args.cluster)
        return read_live(args.kubeconfig, args.context)
    except (SnapshotError, ClusterReadError) as exc:
        raise ClusterSourceError(str(exc)) from None


def config_for(args: argparse.Namespace, state: ClusterState) -> Config:
    """The configuration for the target release: --target-version, else the cluster's."""
    from dra_migrate.configfile import load_config

    target = args.target_version or state.minor_release
    try:
        if args.target_version is not None:  # '' is a mistake, not the default
            Target.parse(args.target_version)
    except TargetVersionError as exc:
        raise ClusterSourceError(f"--target-version: {exc}") from None
    try:
        return load_config(args.config, target)
    except (ConfigError, TargetVersionError) as exc:
        raise ClusterSourceError(f"config: {exc}") from None


def _write_files(directory: Path, files: dict[str, str]) -> None:
    from dra_migrate.manifests.atomicwrite import write_bytes_atomic

    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_bytes_atomic(directory / name, text.encode("utf-8"))


def run_plan(args: argparse.Namespace) -> int:
    from dra_migrate.planning.build import build_plan
    from dra_migrate.planning.html import render_html
    from dra_migrate.planning.text import render_text
    from dra_migrate.planning.write import manifests

    if args.write is not None and args.write.exists() and not args.write.is_dir():
        return fail("plan", f"--write {args.write}: a file; name a directory to write the plan's manifests to")
    try:
        if args.snapshot is not None and args.cluster is not None:
            raise ClusterSourceError("--snapshot writes what is read from a live cluster; --cluster reads a snapshot")
        state = read_cluster(args)
        config = config_for(args, state)
        if args.snapshot is not None:
            from dra_migrate.cluster.snapshot import write_snapshot

            write_snapshot(state, args.snapshot)
    except ClusterSourceError as exc:
        return fail("plan", str(exc))
    except OSError as exc:
        return fail("plan", f"{exc.filename or args.snapshot}: {exc.strerror or exc}")
    plan, stages = build_plan(state, config, args.pool_label, args.consumable_shares)
    if args.report == "json":
        report = json.dumps(plan.to_json(), indent=2, sort_keys=False) + "\n"
    elif args.report == "html":
        report = render_html(plan)
    else:
        report = render_text(plan)
    try:
        if args.write is not None:
            _write_files(args.write, manifests(plan, config, stages))
        if args.report_file:
            Path(args.report_file).write_text(report, encoding="utf-8")
        else:
            sys.stdout.write(report)
    except OSError as exc:
        return fail("plan", f"{exc.filename}: {exc.strerror or exc}")
    for error in plan.errors:
        print(f"dra-migrate plan: error: {error}", file=sys.stderr)
    return EXIT_ERROR if plan.errors else EXIT_OK
