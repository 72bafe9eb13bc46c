"""`spec.nodeName` -> node selection, for pods that use claims.

A pod with `nodeName` skips the scheduler, so nobody allocates its claims and the kubelet refuses
to start it; the Kubernetes DRA docs recommend a node selector instead.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.config import NodeNamePolicy
from dra_migrate.engine.findings import Findings, PathParts, json_path

HOSTNAME_LABEL = "kubernetes.io/hostname"


def _uses_claims(pod_spec: dict[str, Any]) -> bool:
    claims = pod_spec.get("resourceClaims")
    return isinstance(claims, list) and bool(claims)


def convert_node_name(pod_spec: dict[str, Any], base: PathParts, policy: NodeNamePolicy, findings: Findings) -> bool:
    node = pod_spec.get("nodeName")
    if not isinstance(node, str) or not node:
        return False
    if policy.scope == "claims" and not _uses_claims(pod_spec):
        return False
    path = json_path(*base, "nodeName")
    if policy.mode == "nodeSelector":
        applied = _to_node_selector(pod_spec, node, base, findings)
    else:
        applied = _to_node_affinity(pod_spec, node, base, findings)
    if applied:
        del pod_spec["nodeName"]
        target = "nodeSelector kubernetes.io/hostname" if policy.mode == "nodeSelector" else "node affinity"
        findings.info(
            "node-name-to-selector",
            path,
            f"nodeName {node!r} -> {target} so the scheduler allocates claims; the pod no longer bypasses the "
            "scheduler, so the node's NoSchedule taints and a cordon (unschedulable) now apply to it",
        )
    return applied


def _to_node_selector(pod_spec: dict[str, Any], node: str, base: PathParts, findings: Findings) -> bool:
    selector = pod_spec.get("nodeSelector")
    if selector is None:
        selector = {}
    if not isinstance(selector, dict):
        findings.error(
            "node-name-conflict", json_path(*base, "nodeSelector"), "nodeSelector is not a map; nodeName kept"
        )
        return False
    current = selector.get(HOSTNAME_LABEL)
    if current is not None and current != node:
        findings.error(
            "node-name-conflict",
            json_path(*base, "nodeSelector", HOSTNAME_LABEL),
            f"nodeSelector {HOSTNAME_LABEL}={current!r} conflicts with nodeName {node!r}; "
            "the pod could never be scheduled; nodeName kept, fix one of them",
        )
        return False
    selector[HOSTNAME_LABEL] = node
    pod_spec["nodeSelector"] = selector
    return True


def _to_node_affinity(pod_spec: dict[str, Any], node: str, base: PathParts, findings: Findings) -> bool:
    """Required affinity on the node's name (matchFields metadata.name): exact even where hostname != node name."""
    requirement = {"key": "metadata.name", "operator": "In", "values": [node]}
    affinity = _child(pod_spec, "affinity", {})
    node_affinity = _child(affinity, "nodeAffinity", {})
    required = _child(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = _child(required, "nodeSelectorTerms", [])
    if not terms:
        terms.append({"matchFields": [requirement]})
        return True
    # Terms are ORed, so the node name has to be ANDed into every one of them.
    for index, term in enumerate(terms):
        for field in term.get("matchFields", []) or []:
            values = field.get("values") or []
            excluded = node in values if field.get("operator") == "NotIn" else node not in values
            if field.get("key") == "metadata.name" and excluded:
                findings.error(
                    "node-name-conflict",
                    json_path(
                        *base,
                        "affinity",
                        "nodeAffinity",
                        "requiredDuringSchedulingIgnoredDuringExecution",
                        "nodeSelectorTerms",
                        index,
                    ),
                    f"node affinity on metadata.name excludes nodeName {node!r}; nodeName kept",
                )
                return False
    for term in terms:
        term["matchFields"] = [*(term.get("matchFields") or []), dict(requirement, values=[node])]
    return True


def _child(parent: dict[str, Any], key: str, empty: Any) -> Any:
    """`parent[key]`, created as `empty` when absent or null (`affinity:` with no value in YAML)."""
    if parent.get(key) is None:
        parent[key] = empty
    return parent[key]
