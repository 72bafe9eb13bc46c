"""A Plan from a ClusterState: node pools and their stacks, DeviceClasses, every GPU workload's path
through the engine with the cluster's knowledge, quotas, and the ordered cutover per pool."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from dra_migrate.cluster.state import ClusterState, allocatable_of, labels_of, name_of, namespace_of
from dra_migrate.engine import (
    Config,
    DeviceRequestSpec,
    Severity,
    SharedDevices,
    Target,
    Unconvertible,
    convert,
    is_extended_resource,
    resource_entries,
    serving_classes,
    with_served_classes,
    with_shared_devices,
)
from dra_migrate.planning.amdplugin import amd_plugins, partition_names
from dra_migrate.planning.deviceplugin import PluginSource, Sharing, node_sharing, plugin_sources
from dra_migrate.planning.intelplugin import IntelShare, intel_node_sharing, intel_shares
from dra_migrate.planning.model import ClassMapping, Plan, Pool, Quota, SharedResource, Step, Workload
from dra_migrate.planning.nvidiadra import SHARES_CAPACITY, driver_values_file, settings_text, shares_for

# Labels that name a node's pool on the common platforms, in this order; `--pool-label` overrides.
POOL_LABELS = (
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
NO_POOL = "(no pool label)"
_CONTROLLERS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


class DevicePlugins(NamedTuple):
    """The sharing device plugins of a cluster, read once per run (ConfigMaps parsed, flags read)."""

    nvidia: list[PluginSource]
    intel: list[IntelShare]

    def shares_on(self, node: dict[str, Any]) -> tuple[Sharing, ...]:
        """What a node advertises as shares: NVIDIA's time-slicing or MPS, Intel's shared-dev-num."""
        return node_sharing(self.nvidia, node) + intel_node_sharing(self.intel, node)


def device_plugins(state: ClusterState) -> DevicePlugins:
    return DevicePlugins(plugin_sources(state), intel_shares(state))


def shared_names(
    state: ClusterState, plugins: DevicePlugins, target: Target, consumable_shares: bool = False
) -> dict[str, SharedDevices]:
    """Device-plugin names the cluster's nodes advertise as shares: why an exclusive claim cannot mean them,
    the labels of the nodes that share them and of those that serve them whole (a pod whose nodeSelector
    rules all sharing nodes out converts as usual), and, where the DRA driver will hand out shares
    (`consumable_shares`), the capacity a pod that can land only on sharing nodes claims one share of."""
    found: dict[str, list[tuple[dict[str, Any], Sharing]]] = defaultdict(list)
    for node in state.of("Node"):
        for share in plugins.shares_on(node):
            found[share.advertised].append((node, share))
    with_slices = {str((s.get("spec") or {}).get("nodeName")) for s in state.of("ResourceSlice")}
    shares = {}
    for name, where in sorted(found.items()):
        nodes = sorted(name_of(n) for n, _ in where)
        share = where[0][1]
        sharing = set(nodes)
        others = [
            labels_of(n)
            for n in state.of("Node")
            if name_of(n) not in sharing
            and (_quantity(allocatable_of(n).get(share.resource, 0)) > 0 or name_of(n) in with_slices)
        ]
        capacity, why_not = shares_for(share.resource, share.strategy, target, consumable_shares)
        reason = (
            f"the device plugin shares it ({share.strategy}, {share.replicas} per device) on {', '.join(nodes[:3])}"
            f"{' and others' if len(nodes) > 3 else ''}: a request there is a share of a device, a claim gets whole "
            f"devices (up to {share.replicas} times as many); "
        )
        if capacity:
            reason += (
                "a pod that can land only there gets a claim for one share, but this one can also land on nodes "
                "that serve whole devices: select one kind (nodeSelector)"
            )
        else:
            reason += f"keep it on the device plugin, or select nodes that do not share it (nodeSelector); {why_not}"
        whole = share.resource if share.resource != name else None
        shares[name] = SharedDevices(reason, [labels_of(n) for n, _ in where], others, capacity, whole)
    return shares


def served_config(state: ClusterState, config: Config) -> Config:
    """`config` knowing the DeviceClasses the cluster serves names with (KEP-5004)."""
    served = serving_classes(state.of("DeviceClass"))
    return with_served_classes(config, {name: classes[0] for name, classes in served.items()})


def cluster_config(state: ClusterState, config: Config, consumable_shares: bool = False) -> Config:
    """`config` as the cluster decides it: the DeviceClasses it serves names with, and the names it
    shares (never turned into exclusive claims for a pod that can land where they are shared)."""
    shares = shared_names(state, device_plugins(state), config.target, consumable_shares)
    return with_shared_devices(served_config(state, config), shares)


def _node_selector(obj: dict[str, Any], config: Config) -> dict[str, str]:
    """The node selector of a workload's pods (the first pod template's): where it can run."""
    for _, spec in config.workloads.pod_specs(obj):
        selector = spec.get("nodeSelector")
        return {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else {}
    return {}


def _pool_label(node: dict[str, Any], pool_label: str | None) -> dict[str, str]:
    """The node label that names the node's pool, as {key: pool}; {} when none does."""
    labels = labels_of(node)
    for key in (pool_label,) if pool_label else POOL_LABELS:
        if key and labels.get(key):
            return {key: labels[key]}
    return {}


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _driver_of(device_class: str, state: ClusterState) -> str:
    for obj in state.of("DeviceClass"):
        if name_of(obj) == device_class:
            for selector in (obj.get("spec") or {}).get("selectors") or []:
                expression = ((selector or {}).get("cel") or {}).get("expression") or ""
                match = _DRIVER.search(str(expression))
                if match:
                    return match.group(1)
    return device_class


def _device_names(allocatable: dict[str, Any], config: Config) -> dict[str, int]:
    out = {}
    for name, value in allocatable.items():
        mapping = config.mappings.resolve(str(name)) if is_extended_resource(str(name)) else None
        device = isinstance(mapping, DeviceRequestSpec) or (isinstance(mapping, Unconvertible) and mapping.shared)
        if device and _quantity(value) > 0:
            out[str(name)] = _quantity(value)
    return out


def _pools(
    state: ClusterState,
    plugins: DevicePlugins,
    config: Config,
    base: Config,
    pool_label: str | None,
    consumable_shares: bool,
) -> tuple[list[Pool], list[str]]:
    slices: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for slice_ in state.of("ResourceSlice"):
        spec = slice_.get("spec") or {}
        if spec.get("nodeName"):
            slices[str(spec["nodeName"])][str(spec.get("driver"))] += len(spec.get("devices") or [])
    by_pool: dict[str, Pool] = {}
    errors: list[str] = []
    for node in sorted(state.of("Node"), key=name_of):
        name = name_of(node)
        label = _pool_label(node, pool_label)
        pool_name = next(iter(label.values()), NO_POOL)
        pool = by_pool.setdefault(pool_name, Pool(pool_name, [], "none", label=label))
        pool.nodes.append(name)
        # with the cluster's knowledge: a renamed share (`nvidia.com/gpu.shared`) is capacity too
        plugin = _device_names(allocatable_of(node), config)
        shares = {s.advertised: s for s in plugins.shares_on(node)}
        for resource, count in plugin.items():
            pool.device_plugin[resource] = pool.device_plugin.get(resource, 0) + count
            physical = count // shares[resource].replicas if resource in shares else count
            pool.gpus["device-plugin"] = pool.gpus.get("device-plugin", 0) + physical
        for driver, count in slices.get(name, {}).items():
            pool.dra[driver] = pool.dra.get(driver, 0) + count
            pool.gpus["dra"] = pool.gpus.get("dra", 0) + count
        for share in shares.values():
            known = next(
                (s for s in pool.sharing if (s.advertised, s.strategy) == (share.advertised, share.strategy)), None
            )
            if known is None:
                capacity, why_not = shares_for(share.resource, share.strategy, config.target, consumable_shares)
                dra = (
                    f"the DRA driver hands out {share.replicas} shares of each device ({settings_text(share.replicas)})"
                    if capacity
                    else why_not
                )
                pool.sharing.append(
                    SharedResource(share.advertised, share.strategy, share.replicas, [name], capacity, dra)
                )
            else:
                known.nodes.append(name)
        plugin_drivers = {
            _driver_of(spec.device_class_name, state)
            for resource in plugin
            if isinstance(spec := base.mappings.resolve(resource), DeviceRequestSpec)
        }
        if plugin_drivers & set(slices.get(name, {})):
            pool.both.append(name)
    for pool in by_pool.values():
        has_plugin, has_dra = bool(pool.device_plugin), bool(pool.dra)
        pool.stack = "both" if pool.both else "device-plugin" if has_plugin else "dra" if has_dra else "none"
        if has_plugin and has_dra and not pool.both:
            pool.stack = "mixed"  # different nodes, or different devices on one node
        if pool.both:
            errors.append(
                f"pool {pool.name}: {', '.join(pool.both)} advertise the same devices through the device plugin and a "
                "DRA driver: pods are over-admitted there; stop one of the two on those nodes"
            )
    return sorted(by_pool.values(), key=lambda p: p.name), errors


def _requests(obj: dict[str, Any], config: Config) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for _, spec in config.workloads.pod_specs(obj):
        seen: set[tuple[Any, ...]] = set()
        for where, section, name in resource_entries(spec):
            mapping = config.mappings.resolve(name) if is_extended_resource(name) else None
            if mapping is None or (tuple(where), name) in seen:
                continue
            seen.add((tuple(where), name))
            container: Any = spec
            for part in where:
                container = container[part]
            value = ((container.get("resources") or {}).get(section) or {}).get(name)
            out[name] += _quantity(value)
    return dict(out)


def _owner(obj: dict[str, Any]) -> tuple[str, str] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("kind")), str(ref.get("name"))
    return None


def _placements(state: ClusterState, node_pools: dict[str, str]) -> dict[tuple[str, str, str], set[str]]:
    """(kind, namespace, name) of each pod's top controller -> the pools its pods run in."""
    replica_sets = {(namespace_of(rs), name_of(rs)): _owner(rs) for rs in state.of("ReplicaSet")}
    jobs = {(namespace_of(j), name_of(j)): _owner(j) for j in state.of("Job")}
    out: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for pod in state.of("Pod"):
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            continue
        namespace = namespace_of(pod)
        key = ("Pod", namespace, name_of(pod))
        owner = _owner(pod)
        if owner is not None:
            kind, name = owner
            parent = replica_sets.get((namespace, name)) if kind == "ReplicaSet" else None
            parent = parent or (jobs.get((namespace, name)) if kind == "Job" else None)
            top_kind, top_name = parent or owner
            key = (top_kind, namespace, top_name)
        out[key].add(node_pools.get(str(node), NO_POOL))
    return out


def _selectable(state: ClusterState, selector: dict[str, str], node_pools: dict[str, str]) -> set[str]:
    nodes = (n for n in state.of("Node") if all(labels_of(n).get(k) == v for k, v in selector.items()))
    return {node_pools.get(name_of(n), NO_POOL) for n in nodes}


def _evaluate(obj: dict[str, Any], config: Config) -> tuple[str, list[str]]:
    result = convert(obj, config)
    errors = [f.message for f in result.findings if f.severity is Severity.ERROR]
    if errors:
        return "blocked", errors
    paths = [f.message for f in result.findings if f.rule == "migration-path"]
    if result.conversions:
        return "claims", paths or [f.message for f in result.findings if f.rule == "device-plugin-to-claim"]
    if result.extended:
        return "kep-5004", paths
    return "kept", [f.message for f in result.findings if f.severity is Severity.WARNING]


def _workloads(state: ClusterState, config: Config, node_pools: dict[str, str]) -> list[Workload]:
    placements = _placements(state, node_pools)
    candidates = [o for kind in _CONTROLLERS for o in state.of(kind) if _owner(o) is None]
    candidates += [p for p in state.of("Pod") if (_owner(p) or ("", ""))[0] not in ("ReplicaSet", "Job")]
    out = []
    for obj in candidates:
        requests = _requests(obj, config)
        if not requests:
            continue
        kind, namespace, name = str(obj.get("kind")), namespace_of(obj), name_of(obj)
        selector = _node_selector(obj, config)
        path, reasons = _evaluate(obj, config)
        # where its pods run, else where its node selector lets them run
        pools = sorted(placements.get((kind, namespace, name)) or _selectable(state, selector, node_pools))
        counts = {k: str(v) for k, v in sorted(requests.items())}
        out.append(Workload(kind, namespace, name, pools, counts, path, reasons))
    return sorted(out, key=lambda w: (w.namespace, w.kind, w.name))


def _quotas(state: ClusterState, config: Config) -> list[Quota]:
    out = []
    for kind in ("ResourceQuota", "ClusterQueue", "LimitRange"):
        for obj in state.of(kind):
            result = convert(obj, config)
            problems = [f.message for f in result.findings if f.rule != "migration-path"]
            converted = result.object if result.changed and kind == "ResourceQuota" else None
            keys = sorted(_device_keys(obj, config))
            if keys or problems:
                out.append(Quota(kind, namespace_of(obj), name_of(obj), keys, problems, converted))
    return out


def _device_keys(obj: dict[str, Any], config: Config) -> Iterable[str]:
    hard = (obj.get("spec") or {}).get("hard") or {}
    for key in hard:
        name = str(key).removeprefix("requests.").removeprefix("limits.")
        if is_extended_resource(name) and config.mappings.resolve(name) is not None:
            yield str(key)


def _class_mappings(state: ClusterState) -> tuple[list[ClassMapping], dict[str, list[str]]]:
    served = serving_classes(state.of("DeviceClass"))
    mappings = []
    for name, classes in sorted(served.items()):
        for index, serving in enumerate(classes):
            mappings.append(ClassMapping(serving.name, name, index == 0))
    conflicts = {name: [c.name for c in classes] for name, classes in served.items() if len(classes) > 1}
    return mappings, conflicts


def _kueue(state: ClusterState, config: Config) -> dict[str, Any] | None:
    """Kueue's deviceClassMappings: each mapped name a ClusterQueue covers, to the DeviceClass its claims
    use, so that the queue keeps charging converted pods (it reads them at start-up only)."""
    queues = state.of("ClusterQueue")
    if not (queues or any(v.startswith("kueue.x-k8s.io/") for v in state.api_versions)):
        return None
    covered = sorted(
        {
            str(name)
            for queue in queues
            for group in (queue.get("spec") or {}).get("resourceGroups") or []
            for name in (group or {}).get("coveredResources") or []
        }
    )
    mappings = []
    for name in covered:
        spec = config.mappings.resolve(name)
        if isinstance(spec, DeviceRequestSpec):
            mappings.append({"name": name, "deviceClassNames": [spec.device_class_name]})
    return {"resources": {"deviceClassMappings": mappings}}


def _amd_partition_warnings(state: ClusterState, config: Config) -> list[str]:
    """Per-partition-type names of the AMD plugin's mixed naming that no mapping converts."""
    plugins = amd_plugins(state)
    nodes: dict[str, list[str]] = defaultdict(list)
    for node in state.of("Node"):
        for name in partition_names(plugins, node):
            if config.mappings.resolve(name) is None:
                nodes[name].append(name_of(node))
    return [
        f"{name} on {', '.join(sorted(found))}: the AMD device plugin's mixed naming advertises one name per "
        "partition type, and no mapping converts it; map it to the AMD DRA driver's partition devices (config "
        "file, mappings) or its workloads stay on the device plugin"
        for name, found in sorted(nodes.items())
    ]


def moves_with_shares(pool: Pool) -> bool:
    """Whether the DRA driver can hand out what the pool's device plugin shares: one number of shares."""
    return all(s.dra_capacity for s in pool.sharing) and len({s.replicas for s in pool.sharing}) == 1


def _steps(pools: list[Pool], workloads: list[Workload], has_kueue: bool) -> list[Step]:
    kueue_step = " and Kueue's deviceClassMappings, then restart Kueue (it reads them at start-up)" if has_kueue else ""
    steps = []
    for pool in pools:
        moving = [w for w in workloads if pool.name in w.pools and w.path in ("claims", "kep-5004")]
        blocked = [w for w in workloads if pool.name in w.pools and w.path == "blocked"]
        if pool.stack == "both":
            steps.append(
                Step(
                    pool.name,
                    f"stop the device plugin or the DRA driver on {', '.join(pool.both)} (label the nodes so one "
                    "DaemonSet no longer selects them)",
                    "the nodes advertise the devices one way only: allocatable has no mapped name, or no "
                    "ResourceSlice names the node",
                )
            )
        if pool.stack not in ("device-plugin", "both", "mixed"):
            continue
        if pool.sharing and not moves_with_shares(pool):
            names = ", ".join(sorted({s.advertised for s in pool.sharing}))
            why = "; ".join(sorted({s.dra for s in pool.sharing if not s.dra_capacity})) or (
                "its devices are shared in different numbers, and the driver takes one number per node"
            )
            steps.append(
                Step(
                    pool.name,
                    f"keep this pool on the device plugin: it shares {names}, and what requests it here is a share "
                    f"({why})" + (f"; {len(blocked)} workload(s) run here" if blocked else ""),
                    "nothing to check: this pool is not moved by this plan",
                )
            )
            continue
        install = "install the DRA driver's kubelet plugin on the pool"
        installed = "`kubectl get resourceslices` lists every node of the pool with its devices"
        if pool.sharing:
            replicas = pool.sharing[0].replicas
            install += f" handing out shares (plan --write: {driver_values_file(pool.name)}: {settings_text(replicas)})"
            installed += f", each with allowMultipleAllocations: true and capacity {SHARES_CAPACITY}: {replicas}"
        steps += [
            Step(
                pool.name,
                "cordon the pool's nodes and drain its GPU pods (or wait for them to finish)",
                f"no pod requesting {', '.join(sorted(pool.device_plugin)) or 'a mapped device'} runs on the pool",
            ),
            Step(
                pool.name,
                "label the nodes so the device-plugin DaemonSet no longer selects them",
                "node allocatable lists no mapped device name",
            ),
            Step(pool.name, install, installed),
            Step(
                pool.name,
                "apply the DeviceClasses (plan --write: deviceclasses.yaml)",
                "`kubectl get deviceclasses` shows them, each extendedResourceName once",
            ),
            Step(
                pool.name,
                "apply the converted quotas (plan --write: quotas.yaml)" + kueue_step,
                "`kubectl describe quota` shows the per-class keys with their usage",
            ),
            Step(
                pool.name,
                f"switch the webhook from audit to enforce (plan --write: webhook-config.yaml); {len(moving)} "
                "workload(s) move"
                + (
                    "; the webhook decides the shared names from webhook-config.yaml's sharedDevices (a pod's "
                    "nodeSelector against the pools' labels), as `convert --cluster --consumable-shares` does"
                    if pool.sharing
                    else ""
                ),
                "a new GPU pod of the pool gets a claim and is allocated",
            ),
            Step(pool.name, "uncordon the nodes", "every moved workload's pods are Running with allocated claims"),
        ]
    return steps


def _sees_pods(configuration: dict[str, Any]) -> bool:
    rules = [r for hook in configuration.get("webhooks") or [] for r in hook.get("rules") or [] if isinstance(r, dict)]
    return any("pods" in (r.get("resources") or []) or "*" in (r.get("resources") or []) for r in rules)


def build_plan(
    state: ClusterState, base: Config, pool_label: str | None = None, consumable_shares: bool = False
) -> tuple[Plan, dict[str, SharedDevices]]:
    """The plan, and the names the cluster shares (for `--write`'s webhook configuration). `base`: the
    configuration for the target release, before the cluster's knowledge is added; `consumable_shares`:
    the DRA driver will hand out the shares of the device plugin's time-sliced pools."""
    plugins = device_plugins(state)
    shared = shared_names(state, plugins, base.target, consumable_shares)
    with_classes = served_config(state, base)
    config = with_shared_devices(with_classes, shared)
    pools, errors = _pools(state, plugins, config, base, pool_label, consumable_shares)
    node_pools = {node: pool.name for pool in pools for node in pool.nodes}
    workloads = _workloads(state, config, node_pools)
    classes, conflicts = _class_mappings(state)
    served = {c.extended_resource_name for c in classes}
    unmapped = sorted({n for w in workloads for n in w.requests if w.path == "claims" and n not in served})
    warnings = [problem for source in plugins.nvidia for problem in source.problems]
    warnings += _amd_partition_warnings(state, config)
    warnings += [f"{n} is served by {', '.join(c)}: the scheduler picks {c[0]}" for n, c in sorted(conflicts.items())]
    kueue = _kueue(state, base)
    webhooks = sorted(
        name_of(w)
        for w in state.of("MutatingWebhookConfiguration")
        if any(
            "pods" in str(rule.get("resources")) for hook in w.get("webhooks") or [] for rule in hook.get("rules") or []
        )
    )
    resource_api = sorted(v.split("/", 1)[1] for v in state.api_versions if v.startswith("resource.k8s.io/"))
    plan = Plan(
        cluster=state.source,
        server_version=state.server_version,
        target=str(config.target),
        resource_api=resource_api,
        pools=pools,
        device_classes=classes,
        class_conflicts=conflicts,
        unmapped=unmapped,
        workloads=workloads,
        quotas=_quotas(state, with_classes),  # quotas charge every pod, shared or not
        kueue=kueue,
        webhooks=webhooks,
        steps=_steps(pools, workloads, kueue is not None),
        errors=errors,
        warnings=warnings,
    )
    return plan, shared
