"""Kinds the engine does not know, holding names it would convert: say where, and how to teach it.

A HyperPodPyTorchJob, a SparkApplication (`gpu: {name: nvidia.com/gpu, quantity: 1}`) or an
in-house operator's CRD keeps its device-plugin requests silently otherwise, and its pods then
miss the DeviceClass everything else moved to. Mapped names are looked for as keys and as whole
string values, outside `metadata`; kinds known to hold no pod resources are not walked at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from dra_migrate.engine.findings import Finding, Findings, PathParts, json_path
from dra_migrate.engine.mapping import DeviceRequestSpec, MappingTable

# Compiled by re on first use: only kinds with no known pod specs are walked for it.
_RESOURCE_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
FIELDS_SHOWN = 3  # the first fields make the point; a report of thousands does not

# (API group, kind) of objects that hold no pod resources, or whose names are handled elsewhere
_CORE_KINDS = """
    ConfigMap Secret Service ServiceAccount Namespace Endpoints PersistentVolume PersistentVolumeClaim
    Event ResourceQuota Node
"""
NOT_WALKED = frozenset(
    {("", kind) for kind in _CORE_KINDS.split()}
    | {("rbac.authorization.k8s.io", k) for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")}
    | {
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("policy", "PodDisruptionBudget"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "StorageClass"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("kueue.x-k8s.io", "ClusterQueue"),
    }
)


def _mapped(value: Any, mappings: MappingTable) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= 253
        and re.fullmatch(_RESOURCE_NAME, value) is not None
        and isinstance(mappings.resolve(value), DeviceRequestSpec)
    )


# Keys under which a resource name is not a request: a taint or toleration key (a pod template's
# tolerations for GPU nodes), node selectors and affinity on resource-named labels.
_NOT_REQUESTS = frozenset({"tolerations", "taints", "nodeSelector", "affinity"})


def _occurrences(obj: dict[str, Any], mappings: MappingTable) -> Iterator[tuple[PathParts, str]]:
    stack: list[tuple[PathParts, Any]] = [((key,), value) for key, value in obj.items() if key != "metadata"]
    stack.reverse()
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            children = []
            for key, value in node.items():
                if key in _NOT_REQUESTS:
                    continue
                if _mapped(key, mappings):
                    yield (*path, key), key
                else:
                    children.append(((*path, str(key)), value))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend(reversed([((*path, i), v) for i, v in enumerate(node)]))
        elif _mapped(node, mappings):
            yield path, node


def report_unknown_kind(obj: dict[str, Any], group: str, mappings: MappingTable) -> list[Finding]:
    """One warning for an object of a kind with no known pod specs that names mapped resources: at the
    first field, naming every field up to FIELDS_SHOWN (one object is one thing to teach the engine)."""
    kind = str(obj.get("kind"))
    if (group, kind) in NOT_WALKED:
        return []
    found: list[tuple[PathParts, str]] = []
    for path, name in _occurrences(obj, mappings):
        found.append((path, name))
        if len(found) > FIELDS_SHOWN:
            break
    if not found:
        return []
    names = sorted({name for _, name in found})
    fields = ", ".join(json_path(*path) for path, _ in found[:FIELDS_SHOWN])
    more = " and more" if len(found) > FIELDS_SHOWN else ""
    api_group = group or '""'
    findings = Findings()
    findings.warning(
        "unknown-kind",
        json_path(*found[0][0]),
        f"{kind} ({obj.get('apiVersion')}) is not a kind dra-migrate knows, and it names {', '.join(names)} "
        f"({fields}{more}), which is not converted here; if it holds pod specs, list them in the configuration "
        f"under workloads: (apiGroup: {api_group}, kind: {kind}, podSpecPaths)",
    )
    return findings.items
