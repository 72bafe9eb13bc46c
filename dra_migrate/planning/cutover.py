"""The cutover, pool by pool, in which no workload loses its stack.

- A pool moves only when nothing pinned to it (it can land on no other pool) stays on the device plugin
  after the move: a blocked or kept workload pinned there keeps the pool on the device plugin.
- Its nodes move in batches (cordon, drain through the eviction API so that PodDisruptionBudgets hold,
  label out of the device plugin and into the DRA driver, uncordon). Before the webhook converts the pool's
  pods, the nodes left on the device plugin keep room for the devices its pinned workloads request; after,
  the moved nodes do.
- The webhook converts a name per pool: each stage's configuration (`webhook-config-<n>-<pool>.yaml`) marks
  the nodes still on the device plugin, and a pod that can land on one of them is admitted unchanged (as a
  shared name is), so a pod converts only once every pool that can serve it is on DRA.
- Every step has its check and its undo (back to the device plugin).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dra_migrate.cluster.nodes import ClusterNodes, NodeModel
from dra_migrate.cluster.nvidiadra import driver_values_file, settings_text
from dra_migrate.engine import SharedDevices
from dra_migrate.planning.model import Pool, Step, Workload

DEVICE_PLUGIN_OFF = "the device plugin's DaemonSet no longer selects them (its nodeSelector label set to false)"
FINAL_WEBHOOK = "webhook-config.yaml"
_MOVES = ("claims", "kep-5004")


@dataclass(frozen=True)
class Stage:
    """A webhook configuration: the names it converts for pods that cannot land on `pending` nodes."""

    file: str
    moved: tuple[str, ...]  # pools on DRA at this stage
    shared: dict[str, SharedDevices]


def stage_file(number: int, pool: str) -> str:
    return f"webhook-config-{number}-" + "".join(c if c.isalnum() or c in "-_." else "-" for c in pool) + ".yaml"


def moves_with_shares(pool: Pool) -> bool:
    """Whether the DRA driver can hand out what the pool's device plugin shares: one number of shares."""
    return all(s.dra_capacity for s in pool.sharing) and len({s.replicas for s in pool.sharing}) == 1


def _pinned(pool: Pool, workloads: Sequence[Workload]) -> list[Workload]:
    """Workloads whose pods can land on this pool only."""
    return [w for w in workloads if w.can_land and set(w.can_land) == {pool.name}]


def why_kept(pool: Pool, workloads: Sequence[Workload]) -> str | None:
    """Why a pool with device-plugin nodes stays on the device plugin, or None when it moves."""
    if pool.sharing and not moves_with_shares(pool):
        names = ", ".join(sorted({s.advertised for s in pool.sharing}))
        why = "; ".join(sorted({s.dra for s in pool.sharing if not s.dra_capacity})) or (
            "its devices are shared in different numbers, and the driver takes one number per node"
        )
        return f"it shares {names}, and what requests it here is a share ({why})"
    stuck = [w for w in _pinned(pool, workloads) if w.path not in _MOVES]
    if stuck:
        named = ", ".join(f"{w.kind} {w.namespace}/{w.name}" for w in stuck[:3])
        return f"{named} can land only here and stay(s) on the device plugin ({stuck[0].path}): moving would strand it"
    return None


def _demand(workloads: Iterable[Workload]) -> int:
    return sum(sum(int(v) for v in w.requests.values()) * max(w.replicas, 1) for w in workloads)


def _batches(names: list[str], size: int) -> list[list[str]]:
    return [names[i : i + size] for i in range(0, len(names), size)]


def _move_steps(pool: Pool, batch: list[str], install: str, budgets: list[str], number: int, of: int) -> list[Step]:
    nodes = ", ".join(batch)
    names = ", ".join(sorted(pool.device_plugin)) or "a mapped device"
    drain_note = f"; the drain waits for PodDisruptionBudget(s) {', '.join(budgets)}" if budgets else ""
    return [
        Step(
            pool.name,
            f"batch {number}/{of}: cordon {nodes} and drain them (`kubectl drain --ignore-daemonsets`, which evicts "
            f"through PodDisruptionBudgets){drain_note}",
            f"no pod requesting {names} runs on {nodes}; `kubectl get pdb` shows no budget left at 0",
            f"`kubectl uncordon {' '.join(batch)}`",
        ),
        Step(
            pool.name,
            f"batch {number}/{of}: label {nodes} so that {DEVICE_PLUGIN_OFF}, and {install} selects them",
            f"allocatable of {nodes} lists no {names}; `kubectl get resourceslices` lists their devices",
            f"restore the labels: the device plugin serves {nodes} again and the driver leaves them",
        ),
        Step(
            pool.name,
            f"batch {number}/{of}: uncordon {nodes}",
            f"{nodes} are Ready and schedulable",
            f"cordon {nodes} again",
        ),
    ]


def _per_node(pool: Pool) -> int:
    devices = pool.gpus.get("device-plugin", 0) or sum(pool.device_plugin.values())
    return max(1, devices // max(len(pool.nodes), 1))


def pool_steps(
    pool: Pool,
    workloads: Sequence[Workload],
    nodes: dict[str, NodeModel],
    stage: Stage,
    previous: Stage,
    warnings: list[str],
) -> list[Step]:
    """The batches that move one pool, the webhook switch between them, and the pool's checks."""
    drivers = ", ".join(sorted(pool.drivers)) or "its devices'"
    install = f"the kubelet plugin of the DRA driver {drivers}"
    if pool.sharing:
        replicas = pool.sharing[0].replicas
        install += f", handing out shares ({driver_values_file(pool.name)}: {settings_text(replicas)})"
    pinned = [w for w in _pinned(pool, workloads) if w.path in _MOVES]
    budgets = sorted({b for w in workloads if pool.name in w.can_land or pool.name in w.pools for b in w.budgets})
    # cordoned nodes first (they take no new pods), then by name
    order = sorted(pool.nodes, key=lambda n: (not nodes[n].unschedulable if n in nodes else True, n))
    total = len(order)
    needed = math.ceil(_demand(pinned) / _per_node(pool)) if pinned else 0
    before = max(needed, 1)
    if total - before < needed or total < 2:
        before = max(1, total // 2)
        if needed:
            warnings.append(
                f"pool {pool.name}: its pinned workloads need about {needed} of its {total} nodes, on the device "
                "plugin before the webhook converts them and on DRA after: some of their pods wait Pending during the "
                "move"
            )
    size = max(1, math.ceil(total / 4))
    before_groups, after_groups = _batches(order[:before], size), _batches(order[before:], size)
    if not after_groups:  # one batch: the webhook converts first, and the pods wait for the moved node
        before_groups, after_groups = [], before_groups
    count = len(before_groups) + len(after_groups)
    moving = sum(1 for w in workloads if pool.name in w.pools and w.path in _MOVES)
    steps: list[Step] = []
    for number, batch in enumerate(before_groups, 1):
        steps += _move_steps(pool, batch, install, budgets, number, count)
    steps.append(
        Step(
            pool.name,
            f"webhook: serve with {stage.file}: names convert for pods that can land only on DRA nodes (pools "
            f"{', '.join(stage.moved)} moved); {moving} workload(s) of this pool move as their pods are recreated",
            "a new pod of a workload pinned to the pool gets a claim (or, where a DeviceClass maps the name, keeps "
            "its request for KEP-5004) and is allocated on a moved node; a pod that can still land on a "
            "device-plugin node is admitted unchanged (dra-migrate warning)",
            f"serve with {previous.file}; then delete the pool's converted pods so that their controllers recreate "
            "them with device-plugin requests",
        )
    )
    for number, batch in enumerate(after_groups, len(before_groups) + 1):
        steps += _move_steps(pool, batch, install, budgets, number, count)
    steps.append(
        Step(
            pool.name,
            "confirm the pool is on DRA",
            "every moved workload's pods are Running with allocated claims (`kubectl get resourceclaims -A`)",
            "move every batch back (undo each batch's steps, last first), then apply the previous webhook config",
        )
    )
    return steps


def stages(
    pools: Sequence[Pool],
    moving: Sequence[str],
    nodes: ClusterNodes,
    final_shared: dict[str, SharedDevices],
) -> list[Stage]:
    """The webhook configuration before any pool moves, after each moving pool, and (last) after all."""
    out = []
    moved: list[str] = []
    pool_of = {n: p.name for p in pools for n in p.nodes}
    for index in range(len(moving) + 1):
        if index:
            moved.append(moving[index - 1])
        pending = [n for n in nodes.nodes if n.advertises and pool_of.get(n.name) not in moved]
        name = "webhook-config-0-start.yaml" if index == 0 else stage_file(index, moving[index - 1])
        out.append(Stage(name, tuple(moved), with_pending(final_shared, pending, nodes)))
    return out


def with_pending(
    shared: dict[str, SharedDevices], pending: Sequence[NodeModel], nodes: ClusterNodes
) -> dict[str, SharedDevices]:
    """The shared names, and every name a pending (device-plugin) node advertises: kept for a pod that can
    land there. Nodes where a name means a share or a MIG device convert only once none of them is pending."""
    out = dict(shared)
    by_name: dict[str, list[NodeModel]] = {}
    for node in pending:
        for name in node.advertises:
            by_name.setdefault(name, []).append(node)
    for name, waiting in sorted(by_name.items()):
        names = sorted(n.name for n in waiting)
        labels = {_key(n.labels) for n in waiting}
        reason = (
            f"{name} is still served by the device plugin on {', '.join(names[:3])}"
            f"{' and others' if len(names) > 3 else ''}, where this pod can land: it converts once every pool "
            "that can serve it is on DRA"
        )
        known = out.get(name)
        if known is None:
            out[name] = SharedDevices(reason, [dict(n.labels) for n in waiting], _others(name, nodes, set(names)))
            continue
        groups = [known._replace(more=()), *known.more]
        covered = {_key(labels_) for group in groups for labels_ in group.nodes}
        # a group with a pending node converts nothing yet; pending nodes in no group are a group of their own
        groups = [_kept(g) if any(_key(x) in labels for x in g.nodes) else g for g in groups]
        rest = [dict(n.labels) for n in waiting if _key(n.labels) not in covered]
        if rest:
            groups.append(SharedDevices(reason, rest))
        main = groups[0]._replace(reason=f"{known.reason}; {reason}", others=known.others)
        out[name] = main._replace(more=tuple(groups[1:]))
    return out


def _key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _kept(group: SharedDevices) -> SharedDevices:
    return group._replace(share_capacity=None, converts_as=None)


def _others(name: str, nodes: ClusterNodes, waiting: set[str]) -> list[dict[str, str]]:
    return [dict(n.labels) for n in nodes.nodes if n.name not in waiting and (n.slices or name in n.advertises)]
