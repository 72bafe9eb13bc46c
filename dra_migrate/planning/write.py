"""What `plan --write DIR` writes: the cluster side of the migration, as manifests a GitOps repository
can hold (file name -> text). Pure: the command writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from dra_migrate.cluster.nvidiadra import driver_values, driver_values_file
from dra_migrate.engine import Config, SharedDevices
from dra_migrate.planning.cutover import Stage, moves_with_shares
from dra_migrate.planning.model import Plan

DEVICE_CLASSES = "deviceclasses.yaml"
QUOTAS = "quotas.yaml"
KUEUE = "kueue-config.yaml"
WEBHOOK = "webhook-config.yaml"


def _dump_all(documents: list[Any], header: str) -> str:
    return f"# {header}\n" + yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True)


_SERVER_FIELDS = ("managedFields", "uid", "resourceVersion", "creationTimestamp", "generation", "selfLink")


def _for_repository(obj: dict[str, Any]) -> dict[str, Any]:
    """An object read from a cluster, without what the server sets (status, uid, managedFields, ...)."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_FIELDS}
    annotations = {
        k: v
        for k, v in (metadata.get("annotations") or {}).items()
        if k != "kubectl.kubernetes.io/last-applied-configuration"
    }
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": metadata}


def shared_entry(name: str, devices: SharedDevices) -> dict[str, Any]:
    """A `sharedDevices` entry of the configuration file."""
    entry: dict[str, Any] = {
        "resource": name,
        "reason": devices.reason,
        "sharingNodes": _unique_label_sets(devices.nodes),
    }
    if devices.others:
        entry["otherNodes"] = _unique_label_sets(devices.others)
    if devices.share_capacity:
        entry["shareCapacity"] = devices.share_capacity
    if devices.whole_name:
        entry["wholeResource"] = devices.whole_name
    if devices.converts_as:
        entry["convertsAs"] = devices.converts_as
    return entry


def _unique_label_sets(nodes: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    unique = {tuple(sorted((str(k), str(v)) for k, v in labels.items())) for labels in nodes}
    return [dict(labels) for labels in sorted(unique)]


def manifests(plan: Plan, config: Config, stages: list[Stage]) -> dict[str, str]:
    files: dict[str, str] = {}
    classes = plan.new_classes
    if classes:
        files[DEVICE_CLASSES] = _dump_all(classes, f"DeviceClasses for {plan.target} (KEP-5004 extendedResourceName)")
    quotas = [_for_repository(q.converted) for q in plan.quotas if q.converted is not None]
    if quotas:
        files[QUOTAS] = _dump_all(quotas, "ResourceQuotas with the per-DeviceClass keys claims are charged to")
    if plan.kueue is not None:
        files[KUEUE] = _dump_all(
            [plan.kueue], "merge into Kueue's Configuration (kueue-manager-config), then restart Kueue"
        )
    for pool in plan.pools:
        if pool.sharing and moves_with_shares(pool) and pool.share_selector:
            replicas = pool.sharing[0].replicas
            files[driver_values_file(pool.name)] = _dump_all(
                [driver_values(replicas, pool.share_selector)],
                f"Helm values for the NVIDIA DRA driver (dra-driver-nvidia-gpu 0.5+) on pool {pool.name}: its "
                f"kubelet plugin hands out each GPU as {replicas} shares, as the device plugin's "
                f"{pool.sharing[0].strategy} does, on the nodes whose device plugin config shares them",
            )
    served = plan.stage_device_classes
    for stage in stages:
        files[stage.file] = _webhook_config(plan, stage.shared, stage.moved, served)
    last = stages[-1] if stages else None
    files[WEBHOOK] = _webhook_config(plan, last.shared if last else {}, last.moved if last else (), served)
    return files


def _webhook_config(
    plan: Plan, shared: dict[str, SharedDevices], moved: Sequence[str], served: list[dict[str, Any]]
) -> str:
    webhook: dict[str, Any] = {"targetVersion": plan.target}
    if served:
        # the classes the plan's DeviceClass step creates, which the webhook then finds in the cluster (it
        # watches them): here so that `convert --config` decides each path as the webhook does
        webhook["clusterDeviceClasses"] = served
    if shared:
        # the webhook reads no nodes: it decides from a pod's nodeSelector, nodeName and required node affinity
        # against these label sets, as `convert --cluster` does; re-run plan --write when the pools change
        webhook["sharedDevices"] = [
            shared_entry(name, entry)
            for name, devices in sorted(shared.items())
            for entry in (devices._replace(more=()), *devices.more)
        ]
    header = (
        "dra-migrate configuration for this cluster (serve --config, convert --config)"
        + (f" once pools {', '.join(moved)} are on DRA" if moved else " before any pool moves")
        + ": the names the device plugin shares or still serves, on which nodes, and how a pod that can land "
        "there converts; re-run `plan --write` when node pools or the device plugin's configuration change"
    )
    return _dump_all([webhook], header)
