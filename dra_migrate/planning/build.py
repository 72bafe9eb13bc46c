"""A Plan from a ClusterState: node pools and their stacks, DeviceClasses, every GPU workload's path
through the engine with the cluster's knowledge, quotas, and the ordered cutover per pool."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dra_migrate.cluster.amdplugin import amd_plugins, partition_names
from dra_migrate.cluster.knowledge import served_config, shared_names
from dra_migrate.cluster.nodes import ClusterNodes, NodeModel, cluster_nodes
from dra_migrate.cluster.nvidiadra import settings_text, shares_for
from dra_migrate.cluster.nvidiaplugin import CONFIG_LABEL
from dra_migrate.cluster.state import KINDS, ClusterState, name_of, namespace_of
from dra_migrate.engine import (
    EXTENDED_RESOURCE_GATE,
    Config,
    DeviceRequestSpec,
    Severity,
    SharedDevices,
    Target,
    TargetVersionError,
    convert,
    is_extended_resource,
    is_mirror_pod,
    resource_entries,
    selects,
    serving_classes,
    tolerates,
    with_shared_devices,
)
from dra_migrate.planning.classes import class_entries, classes_to_write, names_served, with_written_classes
from dra_migrate.planning.cutover import Stage, pool_steps, stages, why_kept
from dra_migrate.planning.model import ClassMapping, Plan, Pool, Quota, SharedResource, Step, Workload

# Labels that name a node's pool on the common platforms, in this order; `--pool-label` overrides.
POOL_LABELS = (
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
NO_POOL = "(no pool label)"
ObjectKey = tuple[str, str, str]  # kind, namespace, name
_NOT_WORKLOADS = {"Node", "Pod", "ResourceQuota", "LimitRange", "ClusterQueue", "ResourceFlavor", "DeviceClass"}
_NOT_WORKLOADS |= {"ResourceSlice", "MutatingWebhookConfiguration", "ClusterPolicy", "GpuDevicePlugin", "DeviceConfig"}


def _pool_label(labels: Mapping[str, str], pool_label: str | None) -> dict[str, str]:
    """The node label that names the node's pool, as {key: pool}; {} when none does."""
    for key in (pool_label,) if pool_label else POOL_LABELS:
        if key and labels.get(key):
            return {key: labels[key]}
    return {}


def _quantity(value: Any) -> int:
    from dra_migrate.cluster.nodes import quantity

    return quantity(value)


def _pools(
    nodes: ClusterNodes, config: Config, pool_label: str | None, consumable_shares: bool
) -> tuple[list[Pool], list[str]]:
    """Pools of node models: what each pool's nodes advertise, their DRA devices and shares."""
    by_pool: dict[str, Pool] = {}
    errors: list[str] = []
    for node in nodes.nodes:
        label = _pool_label(node.labels, pool_label)
        pool_name = next(iter(label.values()), NO_POOL)
        pool = by_pool.setdefault(pool_name, Pool(pool_name, [], "none", label=label))
        pool.nodes.append(node.name)
        for resource, count in node.advertises.items():
            pool.device_plugin[resource] = pool.device_plugin.get(resource, 0) + count
        for driver, count in node.slices.items():
            pool.dra[driver] = pool.dra.get(driver, 0) + count
        for stack, count in node.physical.items():
            pool.gpus[stack] = pool.gpus.get(stack, 0) + count
        if node.single_mig_profile():
            pool.mig_single[node.name] = node.single_mig_profile() or ""
        for share in node.sharing:
            key = (share.advertised, share.strategy, share.replicas)
            known = next((s for s in pool.sharing if (s.advertised, s.strategy, s.replicas) == key), None)
            if known is None:
                capacity, why_not = shares_for(share.resource, share.strategy, config.target, consumable_shares)
                dra = (
                    f"the DRA driver hands out {share.replicas} shares of each device ({settings_text(share.replicas)})"
                    if capacity
                    else why_not
                )
                pool.sharing.append(
                    SharedResource(share.advertised, share.strategy, share.replicas, [node.name], capacity, dra)
                )
            else:
                known.nodes.append(node.name)
        if node.over_admitted:
            pool.both.append(node.name)
        pool.drivers = sorted(set(pool.drivers) | set(node.plugin_drivers))
    for pool in by_pool.values():
        pool.share_selector = _share_selector(pool, nodes)
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


def _share_selector(pool: Pool, nodes: ClusterNodes) -> dict[str, str]:
    """Labels that all of the pool's sharing nodes carry and no other node of the cluster does together:
    the pool's label with the device plugin's per-node config label, else with any other label they share."""
    sharing = {name for share in pool.sharing for name in share.nodes}
    if not sharing:
        return {}
    models = [n for n in nodes.nodes if n.name in sharing]
    common = set(models[0].labels.items())
    for model in models[1:]:
        common &= set(model.labels.items())
    first = [*pool.label.items(), *((k, v) for k, v in sorted(common) if k == CONFIG_LABEL)]
    for extra in [(), *((item,) for item in sorted(common) if item not in first)]:
        selector = dict([*first, *extra])
        if selector and all(
            n.name in sharing for n in nodes.nodes if all(n.labels.get(k) == v for k, v in selector.items())
        ):
            return selector
    return {}


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


def _key(obj: dict[str, Any]) -> ObjectKey:
    return str(obj.get("kind")), namespace_of(obj), name_of(obj)


class _Owners:
    """Each object's top controller among the objects read (Pod -> ReplicaSet -> Deployment, Pod -> Job ->
    CronJob, Pod -> StatefulSet, Pod -> PyTorchJob): a workload is planned once, with its controller."""

    def __init__(self, state: ClusterState, kinds: Iterable[str]) -> None:
        self.read = {_key(obj) for kind in kinds for obj in state.of(kind)}

    def parent(self, obj: dict[str, Any]) -> ObjectKey | None:
        owner = _owner(obj)
        key = (owner[0], namespace_of(obj), owner[1]) if owner else None
        return key if key in self.read else None

    def top(self, obj: dict[str, Any], objects: dict[ObjectKey, dict[str, Any]]) -> ObjectKey:
        key, seen = _key(obj), set()
        while key in objects and key not in seen:
            seen.add(key)
            parent = self.parent(objects[key])
            if parent is None:
                return key
            key = parent
        return key


def _placements(
    state: ClusterState, owners: _Owners, objects: dict[ObjectKey, dict[str, Any]], node_pools: dict[str, str]
) -> dict[ObjectKey, set[str]]:
    """Each running pod's top controller -> the pools its pods run in."""
    out: dict[ObjectKey, set[str]] = defaultdict(set)
    for pod in state.of("Pod"):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            out[owners.top(pod, objects)].add(node_pools.get(str(node), NO_POOL))
    return out


def landing(obj: dict[str, Any], config: Config, nodes: ClusterNodes) -> list[NodeModel]:
    """The schedulable nodes a workload's pods can land on: any of its pod templates' nodeSelector,
    nodeName and required node affinity select the node and its tolerations cover the node's taints."""
    specs = [spec for _, spec in config.workloads.pod_specs(obj) if isinstance(spec, dict)]
    found: dict[str, NodeModel] = {}
    for spec in specs:
        for node in nodes.candidates(spec):
            if node.name in found or node.unschedulable:
                continue
            if selects(spec, node.labels, node.name) and tolerates(spec, node.taints):
                found[node.name] = node
    return sorted(found.values(), key=lambda n: n.name)


def _as_created_again(obj: dict[str, Any]) -> dict[str, Any]:
    """A Pod as whoever created it creates it again (the cutover evicts it): without the spec.nodeName the
    scheduler's binding set. A nodeName its creator wrote shows in a managedFields entry (the binding
    records none); without managedFields the nodeName is kept."""
    spec = obj.get("spec")
    fields = (obj.get("metadata") or {}).get("managedFields")
    if obj.get("kind") != "Pod" or not isinstance(spec, dict) or not spec.get("nodeName"):
        return obj
    if not isinstance(fields, list):
        return obj
    # entries of the object itself, not of its status (after a managedFields reset only those may be left)
    spec_entries = [
        ((entry.get("fieldsV1") or {}).get("f:spec") or {})
        for entry in fields
        if isinstance(entry, dict) and not entry.get("subresource") and isinstance(entry.get("fieldsV1"), dict)
    ]
    if not any(spec_entries) or any("f:nodeName" in entry for entry in spec_entries if isinstance(entry, dict)):
        return obj
    return {**obj, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}


def _evaluate(obj: dict[str, Any], config: Config) -> tuple[str, list[str]]:
    """The path of a workload as created again (`_as_created_again`), and why."""
    if obj.get("kind") == "Pod" and is_mirror_pod(obj):
        return "kept", [
            "mirror pod of a static pod: the apiserver refuses a converted mirror pod, so the webhook leaves it; "
            "convert the static pod's manifest on its node, and the kubelet recreates the mirror pod from it"
        ]
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


def _replicas(obj: dict[str, Any]) -> int:
    """The pods a workload runs: spec.replicas, a Job's parallelism, or the sum of its replica specs'."""
    found = obj.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    for key in ("replicas", "parallelism"):
        if isinstance(spec.get(key), int) and not isinstance(spec.get(key), bool):
            return max(int(spec[key]), 0)
    nested = [v for k, v in spec.items() if k.endswith("ReplicaSpecs") and isinstance(v, dict)]
    counts = [r.get("replicas", 1) for group in nested for r in group.values() if isinstance(r, dict)]
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool)) or 1


def _budgets(obj: dict[str, Any], config: Config, state: ClusterState) -> list[str]:
    """PodDisruptionBudgets of the workload's namespace whose matchLabels select its pod templates."""
    labels = [
        (template.get("metadata") or {}).get("labels") or {}
        for where, _ in config.workloads.pod_specs(obj)
        for template in [_template_of(obj, where)]
    ]
    found = []
    for budget in state.of("PodDisruptionBudget"):
        wanted = ((budget.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if namespace_of(budget) != namespace_of(obj) or not isinstance(wanted, dict) or not wanted:
            continue
        if any(isinstance(have, dict) and all(have.get(k) == v for k, v in wanted.items()) for have in labels):
            found.append(name_of(budget))
    return sorted(found)


def _template_of(obj: dict[str, Any], where: tuple[Any, ...]) -> dict[str, Any]:
    """The pod template holding the pod spec at `where` (the path up to its `spec`), or the object."""
    node: Any = obj
    for part in where[:-1]:
        node = node[part] if isinstance(node, (dict, list)) else None
    return node if isinstance(node, dict) else obj


def _workloads(
    state: ClusterState,
    config: Config,
    nodes: ClusterNodes,
    node_pools: dict[str, str],
    before: Sequence[Workload] = (),
) -> list[Workload]:
    """Every GPU workload, its path decided with `config`; `before`: the workloads as planned before the plan's
    DeviceClass step, whose path a workload also records when it differs."""
    earlier_paths = {(w.kind, w.namespace, w.name): w.path for w in before}
    kinds = sorted({kind for kind, *_ in KINDS if kind not in _NOT_WORKLOADS})
    owners = _Owners(state, [*kinds, "Pod"])
    objects = {_key(o): o for kind in [*kinds, "Pod"] for o in state.of(kind)}
    placements = _placements(state, owners, objects, node_pools)
    candidates = [o for kind in [*kinds, "Pod"] for o in state.of(kind) if owners.parent(o) is None]
    out = []
    for obj in candidates:
        requests = _requests(obj, config)
        if not requests:
            continue
        kind, namespace, name = _key(obj)
        created = _as_created_again(obj)
        path, reasons = _evaluate(created, config)
        earlier = earlier_paths.get((kind, namespace, name), path)
        if earlier != path:
            reasons = [f"{path} once the plan's DeviceClasses are applied ({earlier} before)", *reasons]
        can_land: dict[str, int] = defaultdict(int)
        for node in landing(created, config, nodes):
            can_land[node_pools.get(node.name, NO_POOL)] += 1
        # where its pods run, else where they can land
        pools = sorted(placements.get((kind, namespace, name)) or can_land)
        counts = {k: str(v) for k, v in sorted(requests.items())}
        workload = Workload(kind, namespace, name, pools, counts, path, reasons, dict(sorted(can_land.items())))
        workload.replicas = _replicas(obj)
        workload.budgets = _budgets(obj, config, state)
        workload.path_before_classes = earlier if earlier != path else ""
        out.append(workload)
    return sorted(out, key=lambda w: (w.namespace, w.kind, w.name))


def _quotas(state: ClusterState, config: Config, shared: dict[str, SharedDevices]) -> list[Quota]:
    out = []
    for kind in ("ResourceQuota", "ClusterQueue", "LimitRange"):
        for obj in state.of(kind):
            result = convert(obj, config)
            problems = [f.message for f in result.findings if f.rule != "migration-path"]
            converted = result.object if result.changed and kind == "ResourceQuota" else None
            keys = sorted(_device_keys(obj, config))
            if kind == "ResourceQuota":
                problems += _share_quota_notes(keys, state, config, shared)
            if keys or problems:
                out.append(Quota(kind, namespace_of(obj), name_of(obj), keys, problems, converted))
    return out


def _share_quota_notes(
    keys: list[str], state: ClusterState, config: Config, shared: dict[str, SharedDevices]
) -> list[str]:
    """What limits shares once they are claims: the claim quota evaluator charges a claim one device of its
    class per share, and, where DRAExtendedResource is on, one `requests.<name>` of the name its class's
    extendedResourceName maps (kubernetes pkg/quota/v1/evaluator/core/resource_claims.go,
    setResourceQuantity, 1.35+)."""
    notes = []
    mapped = {c.name: name for name, classes in serving_classes(state.of("DeviceClass")).items() for c in classes}
    for key in keys:
        name = key.removeprefix("requests.").removeprefix("limits.")
        share = shared.get(name)
        spec = config.mappings.resolve(share.whole_name or name) if share and share.share_capacity else None
        if not isinstance(spec, DeviceRequestSpec):
            continue
        device_class = spec.device_class_name
        charged = config.target.release.quota_charges_extended_resource and mapped.get(device_class) == name
        notes.append(
            f"{key}: each share claim counts 1 of {device_class}.deviceclass.resource.k8s.io/devices"
            + (
                f" and 1 of {key} (DeviceClass {device_class} maps {name}, and {config.target}'s claim quota "
                "charges a class's extendedResourceName): the quota keeps limiting shares one for one"
                if charged
                else f"; {key} no longer limits them (no DeviceClass {device_class} maps {name} on {config.target})"
            )
        )
    return notes


def _device_keys(obj: dict[str, Any], config: Config) -> Iterable[str]:
    hard = (obj.get("spec") or {}).get("hard") or {}
    for key in hard:
        name = str(key).removeprefix("requests.").removeprefix("limits.")
        if is_extended_resource(name) and config.mappings.resolve(name) is not None:
            yield str(key)


def _live_release(state: ClusterState) -> Target | None:
    """The release the cluster runs now, when its version is known and parses."""
    try:
        return Target.parse(state.minor_release) if state.minor_release else None
    except TargetVersionError:
        return None


def _class_mappings(state: ClusterState) -> tuple[list[ClassMapping], dict[str, list[str]]]:
    served = serving_classes(state.of("DeviceClass"))
    mappings = []
    for name, classes in sorted(served.items()):
        for index, serving in enumerate(classes):
            mappings.append(ClassMapping(serving.name, name, index == 0))
    conflicts = {name: [c.name for c in classes] for name, classes in served.items() if len(classes) > 1}
    return mappings, conflicts


def _kueue(state: ClusterState, config: Config) -> tuple[dict[str, Any] | None, list[str]]:
    """Kueue's deviceClassMappings: each mapped name a ClusterQueue covers, to the DeviceClass its claims
    use, so that the queue keeps charging converted pods (it reads them at start-up only); and why a name
    gets none. Kueue accepts one resource per DeviceClass (pkg/config/validation.go,
    validateDeviceClassMappings, sigs.k8s.io/kueue v0.17.0) and counts a class that has
    extendedResourceName on its own (path separation, site/.../concepts/dynamic_resource_allocation.md):
    such a class is never mapped."""
    queues = state.of("ClusterQueue")
    if not (queues or any(v.startswith("kueue.x-k8s.io/") for v in state.api_versions)):
        return None, []
    covered = sorted(
        {
            str(name)
            for queue in queues
            for group in (queue.get("spec") or {}).get("resourceGroups") or []
            for name in (group or {}).get("coveredResources") or []
        }
    )
    extended = {c.name for classes in serving_classes(state.of("DeviceClass")).values() for c in classes}
    by_class: dict[str, list[str]] = defaultdict(list)
    for name in covered:
        spec = config.mappings.resolve(name)
        if isinstance(spec, DeviceRequestSpec):
            by_class[spec.device_class_name].append(name)
    mappings, warnings = [], []
    for device_class, names in sorted(by_class.items()):
        if device_class in extended:
            warnings.append(
                f"Kueue: DeviceClass {device_class} has extendedResourceName, so Kueue counts its pods by that "
                f"name; it is not mapped for {', '.join(names)} (Kueue's path separation)"
            )
        elif len(names) > 1:
            warnings.append(
                f"Kueue: {', '.join(names)} all become claims of DeviceClass {device_class}, and Kueue maps a class "
                f"to one resource: cover one name for it (a ClusterQueue quota per profile cannot be kept)"
            )
        else:
            mappings.append({"name": names[0], "deviceClassNames": [device_class]})
    return {"resources": {"deviceClassMappings": mappings}}, warnings


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


def _steps(
    pools: list[Pool],
    workloads: list[Workload],
    nodes: ClusterNodes,
    shared: dict[str, SharedDevices],
    prepare: list[Step],
    warnings: list[str],
) -> tuple[list[Step], list[Stage]]:
    """The cutover: what every pool needs first, then each pool that moves, in batches, with the webhook
    configuration of its stage; pools kept on the device plugin say why."""
    served = [p for p in pools if p.stack in ("device-plugin", "both", "mixed")]
    kept = {p.name: why_kept(p, workloads) for p in served}
    moving = [p.name for p in served if kept[p.name] is None]
    all_stages = stages(pools, moving, nodes, shared)
    # over-admission first: the nodes served both ways count their devices twice
    steps = [
        Step(
            pool.name,
            f"stop the device plugin or the DRA driver on {', '.join(pool.both)} (label the nodes so one "
            "DaemonSet no longer selects them)",
            "the nodes advertise the devices one way only: allocatable has no mapped name, or no "
            "ResourceSlice names the node",
            "restore the label (the devices are then counted twice again: do not leave it so)",
        )
        for pool in pools
        if pool.stack == "both"
    ]
    steps += prepare
    steps.append(
        Step(
            "(all)",
            f"webhook: serve with {all_stages[0].file} (mode enforce): it converts a name only for pods that cannot "
            "land on a node still on the device plugin",
            "`dra-migrate serve` is Ready; a new GPU pod that can land on a device-plugin node is admitted unchanged",
            "serve with the configuration the webhook had before (or remove its MutatingWebhookConfiguration)",
        )
    )
    by_name = nodes.by_name()
    for pool in pools:
        if pool.name not in kept:
            continue
        why = kept[pool.name]
        if why is not None:
            blocked = [w for w in workloads if pool.name in w.pools and w.path == "blocked"]
            steps.append(
                Step(
                    pool.name,
                    f"keep this pool on the device plugin: {why}"
                    + (f"; {len(blocked)} workload(s) run here" if blocked else ""),
                    "nothing to check: this pool is not moved by this plan, and every webhook stage keeps its names "
                    "for pods that can land here",
                    "nothing to undo",
                )
            )
            continue
        index = moving.index(pool.name) + 1
        steps += pool_steps(pool, workloads, by_name, all_stages[index], all_stages[index - 1], warnings)
    return steps, all_stages


def _class_step(written: list[dict[str, Any]], workloads: list[Workload]) -> Step:
    """The DeviceClass step: from it on, the scheduler serves the names these classes map from DRA, and the
    webhook leaves them to it (KEP-5004); the paths that change there are named."""
    names = ", ".join(sorted(str((c.get("spec") or {}).get("extendedResourceName")) for c in written))
    changed = [w for w in workloads if w.path_before_classes]
    check = f"`kubectl get deviceclasses` shows them, each extendedResourceName once ({names})"
    if changed:
        listed = "; ".join(f"{w.kind} {w.namespace}/{w.name} {w.path_before_classes} -> {w.path}" for w in changed)
        check += (
            f"; the paths this step changes: {listed}; their pods keep running on the device plugin, and a pod "
            "of theirs recreated on a moved node is allocated from DRA through the class (its status names an "
            "extended resource claim)"
        )
    return Step(
        "(all)",
        f"apply the DeviceClasses (plan --write: deviceclasses.yaml): the scheduler then serves {names} from DRA on "
        "nodes whose device plugin no longer advertises it (KEP-5004), and the webhook leaves such requests to it",
        check,
        "`kubectl delete -f deviceclasses.yaml` (before any pod depends on them: a pod already allocated through "
        "a class keeps its claim)",
    )


def _prepare(has_kueue: bool, written: list[dict[str, Any]], workloads: list[Workload], quotas: bool) -> list[Step]:
    steps = []
    if written:
        steps.append(_class_step(written, workloads))
    if quotas:
        steps.append(
            Step(
                "(all)",
                "apply the converted quotas (plan --write: quotas.yaml)",
                "`kubectl describe quota` shows the per-class keys with their usage",
                "apply the quotas as they were (the per-class keys limit nothing on the device plugin)",
            )
        )
    if has_kueue:
        steps.append(
            Step(
                "(all)",
                "merge kueue-config.yaml's deviceClassMappings into Kueue's configuration, then restart Kueue (it "
                "reads them at start-up)",
                "Kueue's controller is Ready and its log shows no configuration error",
                "remove the mappings and restart Kueue",
            )
        )
    return steps


def _sees_pods(configuration: dict[str, Any]) -> bool:
    rules = [r for hook in configuration.get("webhooks") or [] for r in hook.get("rules") or [] if isinstance(r, dict)]
    return any("pods" in (r.get("resources") or []) or "*" in (r.get("resources") or []) for r in rules)


def build_plan(
    state: ClusterState, base: Config, pool_label: str | None = None, consumable_shares: bool = False
) -> tuple[Plan, list[Stage]]:
    """The plan, and the webhook's configuration at each stage of the cutover (for `--write`). `base`: the
    configuration for the target release, before the cluster's knowledge is added; `consumable_shares`:
    the DRA driver will hand out the shares of the device plugin's time-sliced pools."""
    nodes = cluster_nodes(state, base.mappings.resolve)
    shared = shared_names(nodes, base.target, consumable_shares)
    with_classes = served_config(state, base)
    config = with_shared_devices(with_classes, shared)
    pools, errors = _pools(nodes, config, pool_label, consumable_shares)
    node_pools = {node: pool.name for pool in pools for node in pool.nodes}
    workloads = _workloads(state, config, nodes, node_pools)
    classes, conflicts = _class_mappings(state)
    served = {c.extended_resource_name for c in classes}
    # the webhook starts after the DeviceClass step and reads the classes it wrote: paths are as they will be
    names = {n for pool in pools for n in pool.device_plugin} | {n for w in workloads for n in w.requests}
    written = classes_to_write(names, served, config)
    live = _live_release(state)
    if written and live is not None and not live.feature_enabled(EXTENDED_RESOURCE_GATE):
        # the apiserver the classes go to today drops extendedResourceName: they would map nothing
        written = []
        deferred_classes = [
            f"no DeviceClass with extendedResourceName is written: the cluster runs {live}, whose apiserver drops "
            f"the field unless the alpha gate {EXTENDED_RESOURCE_GATE} is on; plan again once it runs "
            f"{config.target} to write them"
        ]
    else:
        deferred_classes = []
    if written:
        workloads = _workloads(state, with_written_classes(config, written), nodes, node_pools, before=workloads)
    served |= names_served(written)
    unmapped = sorted({n for w in workloads for n in w.requests if w.path == "claims" and n not in served})
    stage_classes = class_entries([*state.of("DeviceClass"), *written])
    warnings = list(nodes.warnings)
    classes_served = config.target.feature_enabled(EXTENDED_RESOURCE_GATE)
    if not classes_served and any(pool.device_plugin for pool in pools):
        warnings.append(
            f"no DeviceClass with extendedResourceName is written for {config.target}: its API drops the field "
            f"unless the alpha gate {EXTENDED_RESOURCE_GATE} is on (kube-apiserver and kube-scheduler), and a "
            "class without it maps no name; converted pods use the driver's own classes"
        )
    warnings += deferred_classes
    warnings += _amd_partition_warnings(state, config)
    warnings += [f"{n} is served by {', '.join(c)}: the scheduler picks {c[0]}" for n, c in sorted(conflicts.items())]
    kueue, kueue_warnings = _kueue(state, base)
    warnings += kueue_warnings
    webhooks = sorted(
        name_of(w)
        for w in state.of("MutatingWebhookConfiguration")
        if any(
            "pods" in str(rule.get("resources")) for hook in w.get("webhooks") or [] for rule in hook.get("rules") or []
        )
    )
    quotas = _quotas(state, with_classes, shared)  # quotas charge every pod, shared or not
    prepare = _prepare(kueue is not None, written, workloads, any(q.converted for q in quotas))
    steps, stages_ = _steps(pools, workloads, nodes, shared, prepare, warnings)
    resource_api = sorted(v.split("/", 1)[1] for v in state.api_versions if v.startswith("resource.k8s.io/"))
    plan = Plan(
        cluster=state.source,
        server_version=state.server_version,
        target=str(config.target),
        resource_api=resource_api,
        pools=pools,
        device_classes=classes,
        class_conflicts=conflicts,
        new_classes=written,
        unmapped=unmapped,
        stage_device_classes=stage_classes,
        workloads=workloads,
        quotas=quotas,
        kueue=kueue,
        webhooks=webhooks,
        steps=steps,
        errors=errors,
        warnings=warnings,
    )
    return plan, stages_
