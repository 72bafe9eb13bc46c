"""A pod reviewed again after a later webhook changed it (`reinvocationPolicy: IfNeeded`).

kube-apiserver calls the webhook a second time when another mutating webhook changed the pod after
it. The pod then holds the claims of the first pass (its device-plugin requests are gone) beside
what the later webhook added: an init container asking for `nvidia.com/gpu: 4`, say. Converting
only what is left would give that container claims of its own on top of the first pass's: main 2
+ injected init 4 made claims for 6 devices, where the device plugin needed max(4, 2) = 4.

So the claims of the first pass are turned back into the device-plugin requests they came from,
and the whole pod is converted again: the engine then shares the claims of app containers and
sidecars with the init containers exactly as in a first pass (engine/podspec.py), and the pod's
claims add up to the device-plugin need of the whole pod. The patch is still made against the pod
as sent, so a first-pass claim that stays the same is not touched.

A first-pass claim is recognised by its template's name alone: the engine names a template after
exactly its mapping and count (engine/templates.py), and the webhook uses that name or one of the
few next names (webhook/templates.py). Only claims of a mapping that a request left in the pod
still has are turned back (nothing else would change), and only when no container referencing one
of them asks for that resource itself again. A container's request is the sum of the counts of
the claims it references; an init container that shared a larger claim of a later container
gets that larger count back, which leaves the pod's need the same (the claim is shared again).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from dra_migrate.engine import (
    REQUESTING_CONTAINERS,
    Config,
    DeviceRequestSpec,
    pod_containers,
    resource_maps,
    template_name,
)
from dra_migrate.webhook.templates import candidate_names

MAX_CLAIM_COUNT = 32  # the engine's largest claim (engine/podspec.py MAX_DEVICES_PER_CLAIM)


def _template_names(pod_spec: Mapping[str, Any], config: Config) -> dict[str, tuple[str, int]]:
    """Every template name a first pass could have given a request of a mapping the pod still asks
    for: name -> (the resource name to give back, the count)."""
    names: dict[str, tuple[str, int]] = {}
    for _, _, container in pod_containers(pod_spec, REQUESTING_CONTAINERS):
        limits, requests = resource_maps(container)
        for resource in sorted({*limits, *requests}):
            mapping = config.mappings.resolve(str(resource))
            if not isinstance(mapping, DeviceRequestSpec):
                continue
            for count in range(1, MAX_CLAIM_COUNT + 1):
                for name in candidate_names(template_name(mapping, count)):
                    names.setdefault(name, (str(resource), count))
    return names


def _whole_claim_names(container: Mapping[str, Any]) -> list[str]:
    resources = container.get("resources")
    claims = resources.get("claims") if isinstance(resources, Mapping) else None
    if not isinstance(claims, list):
        return []
    return [str(c["name"]) for c in claims if isinstance(c, Mapping) and c.get("name") and not c.get("request")]


def restore_earlier_claims(pod: Mapping[str, Any], config: Config) -> dict[str, Any] | None:
    """A copy of the pod with the first pass's claims turned back into device-plugin requests, or
    None when it holds none that a request left in the pod shares a mapping with."""
    spec = pod.get("spec")
    pod_claims = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
    if not isinstance(spec, Mapping) or not isinstance(pod_claims, list) or not pod_claims:
        return None
    names = _template_names(spec, config)
    earlier = {
        str(claim["name"]): names[claim["resourceClaimTemplateName"]]
        for claim in pod_claims
        if isinstance(claim, Mapping) and claim.get("name") and claim.get("resourceClaimTemplateName") in names
    }
    containers = [container for _, _, container in pod_containers(spec, REQUESTING_CONTAINERS)]
    for container in containers:  # a container that asks again for a resource keeps its claims as they are
        limits, requests = resource_maps(container)
        for claim in _whole_claim_names(container):
            if claim in earlier and earlier[claim][0] in {*limits, *requests}:
                earlier = {name: found for name, found in earlier.items() if found[0] != earlier[claim][0]}
    referenced = {claim for container in containers for claim in _whole_claim_names(container)}
    earlier = {name: found for name, found in earlier.items() if name in referenced}
    if not earlier:
        return None
    restored = copy.deepcopy(dict(pod))
    restored_spec = restored["spec"]
    for _, _, container in pod_containers(restored_spec, REQUESTING_CONTAINERS):
        _give_back(container, earlier)
    kept = [c for c in restored_spec["resourceClaims"] if not (isinstance(c, Mapping) and c.get("name") in earlier)]
    if kept:
        restored_spec["resourceClaims"] = kept
    else:
        del restored_spec["resourceClaims"]
    return restored


def _whole_claim_of(entry: Any, claims: Mapping[str, Any]) -> bool:
    return isinstance(entry, Mapping) and not entry.get("request") and entry.get("name") in claims


def _give_back(container: dict[str, Any], earlier: Mapping[str, tuple[str, int]]) -> None:
    """Replace the container's references to first-pass claims with the requests they stood for."""
    totals: dict[str, int] = {}
    for claim in _whole_claim_names(container):
        if claim in earlier:
            resource, count = earlier[claim]
            totals[resource] = totals.get(resource, 0) + count
    if not totals:
        return
    resources = container["resources"]
    resources["claims"] = [c for c in resources["claims"] if not _whole_claim_of(c, earlier)]
    if not resources["claims"]:
        del resources["claims"]
    limits = resources.get("limits")
    if not isinstance(limits, dict):
        limits = resources["limits"] = {}
    for resource, total in totals.items():
        limits[resource] = str(total)
