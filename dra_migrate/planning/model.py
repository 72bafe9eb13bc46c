"""What `plan` reports: the plan's parts, and its JSON form (`--report json`, schema below)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "dra-migrate.plan/v1"


@dataclass
class SharedResource:
    advertised: str  # the name the nodes advertise the shares under
    strategy: str  # time-slicing, mps
    replicas: int
    nodes: list[str]
    # where the DRA driver hands the shares out too (consumable shares): the capacity a claim takes one of;
    # else None, and `dra` says why no claim means a share
    dra_capacity: str | None = None
    dra: str = ""


@dataclass
class Pool:
    name: str
    nodes: list[str]
    stack: str  # device-plugin, dra, both, none
    both: list[str] = field(default_factory=list)  # nodes served by both stacks (over-admission)
    device_plugin: dict[str, int] = field(default_factory=dict)  # allocatable per mapped name
    dra: dict[str, int] = field(default_factory=dict)  # devices per driver in the nodes' ResourceSlices
    sharing: list[SharedResource] = field(default_factory=list)
    gpus: dict[str, int] = field(default_factory=dict)  # physical devices by stack, for the chart
    label: dict[str, str] = field(default_factory=dict)  # the node label that names the pool
    # labels that select exactly the pool's sharing nodes (the DRA driver's nodeSelector); {} when none do
    share_selector: dict[str, str] = field(default_factory=dict)
    drivers: list[str] = field(default_factory=list)  # the DRA drivers its device-plugin names map to
    mig_single: dict[str, str] = field(default_factory=dict)  # node -> the MIG profile its nvidia.com/gpu are


@dataclass
class ClassMapping:
    device_class: str
    extended_resource_name: str
    serves: bool  # the scheduler picks this class for the name (the newest, then the first by name)


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    pools: list[str]
    requests: dict[str, str]  # mapped name -> count (per container, summed)
    path: str  # kep-5004, claims, blocked, kept
    reasons: list[str]
    can_land: dict[str, int] = field(default_factory=dict)  # pool -> schedulable nodes its pods can land on
    replicas: int = 1  # pods it runs (spec.replicas, parallelism, the replica specs' sum)
    budgets: list[str] = field(default_factory=list)  # PodDisruptionBudgets that select its pods
    # the path before the plan's DeviceClass step, where that step changes it ("" when it does not)
    path_before_classes: str = ""


@dataclass
class Quota:
    kind: str  # ResourceQuota, ClusterQueue, LimitRange
    namespace: str
    name: str
    keys: list[str]
    problems: list[str]
    converted: dict[str, Any] | None  # the ResourceQuota with its per-class keys added


@dataclass
class Step:
    pool: str  # "(all)" for what every pool needs first
    action: str
    check: str
    undo: str = ""  # back to the device plugin


@dataclass
class Plan:
    cluster: str
    server_version: str | None
    target: str
    resource_api: list[str]  # served resource.k8s.io versions
    pools: list[Pool]
    device_classes: list[ClassMapping]
    class_conflicts: dict[str, list[str]]  # extendedResourceName -> classes that set it
    # the DeviceClasses the plan's DeviceClass step creates (deviceclasses.yaml): never for a name that means a
    # share or a MIG device on some nodes, which KEP-5004 would serve as whole devices of the class
    new_classes: list[dict[str, Any]]
    unmapped: list[str]  # names workloads use that no DeviceClass maps, the plan's own included
    # `clusterDeviceClasses` of every stage's webhook configuration: the cluster's classes with
    # extendedResourceName and the plan's own, so that `convert --config` decides as the webhook does
    stage_device_classes: list[dict[str, Any]]
    workloads: list[Workload]
    quotas: list[Quota]
    kueue: dict[str, Any] | None  # deviceClassMappings to add, when Kueue is installed
    webhooks: list[str]  # other mutating webhooks that see pods
    steps: list[Step]
    errors: list[str]
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self)}

    def workload_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for workload in self.workloads:
            counts[workload.path] = counts.get(workload.path, 0) + 1
        return counts
