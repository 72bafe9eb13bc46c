"""`dra-migrate plan`: arguments (imports only argparse at module level; the work is in planning.command)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dra_migrate.subcommands import Subcommands


def register(subcommands: Subcommands) -> None:
    subcommands.add_command(
        "plan",
        _plan_arguments,
        help="read a cluster (or a snapshot of one) and plan its move to DRA",
        description="Read a cluster through a kubeconfig (get and list only; Secrets are never read) or a "
        "snapshot directory, and report per node pool which stack serves it, the DeviceClasses, every GPU "
        "workload's path, the quotas and the ordered cutover. Exit 0, or 2 when the plan has errors "
        "(nodes served by both stacks) or the cluster cannot be read.",
    )


def cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the cluster is read from: shared by plan, convert and diff."""
    parser.add_argument(
        "--cluster",
        metavar="DIR",
        type=Path,
        help="a snapshot directory of the cluster (`plan --snapshot DIR`, or kubectl get -o yaml output)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        type=Path,
        help="read the live cluster through this kubeconfig (get and list only)",
    )
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    parser.add_argument(
        "--consumable-shares",
        action="store_true",
        help="the DRA driver hands out the device plugin's time-sliced GPUs as shares (NVIDIA: the "
        "ConsumableShares gate and consumableShares = the replicas; Kubernetes 1.36+): a pod that can land "
        "only on a time-sliced pool gets a claim for one share",
    )


def _plan_arguments(plan: argparse.ArgumentParser) -> None:
    cluster_arguments(plan)
    plan.add_argument("--config", metavar="FILE", help="configuration YAML (mappings, strategy)")
    plan.add_argument("--target-version", metavar="X.Y", help="plan for this release (default: the cluster's)")
    plan.add_argument("--pool-label", metavar="LABEL", help="the node label that names a node's pool")
    plan.add_argument(
        "--report",
        choices=("text", "json", "html"),
        default="text",
        help="text (default), json (stable, schema dra-migrate.plan/v1) or html (one self-contained page)",
    )
    plan.add_argument("--report-file", metavar="FILE", help="write the report to FILE instead of stdout")
    plan.add_argument("--write", metavar="DIR", type=Path, help="write what the cluster needs as manifests into DIR")
    plan.add_argument(
        "--snapshot",
        metavar="DIR",
        type=Path,
        help="write what was read from the live cluster into DIR (for --cluster later) and plan as well",
    )
    plan.set_defaults(handler=_run_plan)


def _run_plan(args: argparse.Namespace) -> int:
    from dra_migrate.planning.command import run_plan

    return run_plan(args)
