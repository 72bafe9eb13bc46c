"""The tolerations a pod loses with its extended-resource requests.

kube-apiserver's ExtendedResourceToleration admission plugin gives every pod that requests an
extended resource the toleration `{key: <resource>, operator: Exists, effect: NoSchedule}`, so GPU
nodes can be tainted `nvidia.com/gpu=present:NoSchedule` (GKE does; many GPU pools do by hand) and
only pods that ask for GPUs land there. A converted pod no longer requests the resource: without
the toleration it would stay Pending on exactly the nodes that hold its devices.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dra_migrate.engine.findings import Findings, PathParts, json_path

EFFECT = "NoSchedule"


def _tolerates(toleration: Any, resource: str) -> bool:
    """Whether an existing toleration already tolerates every `resource:NoSchedule` taint."""
    if not isinstance(toleration, dict) or toleration.get("operator", "Equal") != "Exists":
        return False
    key, effect = toleration.get("key") or "", toleration.get("effect") or ""
    return key in ("", resource) and effect in ("", EFFECT)


def keep_resource_tolerations(
    pod_spec: dict[str, Any], resources: Iterable[str], base: PathParts, findings: Findings
) -> bool:
    """Add, for each converted resource name, the toleration the admission plugin would have added."""
    existing = pod_spec.get("tolerations")
    tolerations: list[Any] = existing if isinstance(existing, list) else []
    added = []
    for resource in sorted(set(resources)):
        if not any(_tolerates(t, resource) for t in tolerations):
            tolerations.append({"key": resource, "operator": "Exists", "effect": EFFECT})
            added.append(resource)
    if not added:
        return False
    pod_spec["tolerations"] = tolerations
    findings.info(
        "resource-toleration",
        json_path(*base, "tolerations"),
        f"added the toleration kube-apiserver's ExtendedResourceToleration admission plugin gives pods that "
        f"request {', '.join(added)} (key: the resource, operator: Exists, effect: NoSchedule): the converted "
        "pod no longer requests it, and nodes tainted that way would refuse it; turn off with "
        "resourceTolerations: false",
    )
    return True
