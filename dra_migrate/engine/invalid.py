"""Invalid DRA constructs that circulate in blog posts: reported with the valid form, never guessed at."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.containers import pod_containers
from dra_migrate.engine.findings import Findings, PathParts, json_path

_POD_CLAIM_FIELDS = {"name", "resourceClaimName", "resourceClaimTemplateName", "source"}


def check_pod_spec(pod_spec: dict[str, Any], base: PathParts, findings: Findings) -> None:
    if "resourceClaimTemplates" in pod_spec:
        findings.error(
            "invalid-inline-claim-template",
            json_path(*base, "resourceClaimTemplates"),
            "a pod spec has no resourceClaimTemplates field: create a separate ResourceClaimTemplate "
            "(resource.k8s.io/v1) and reference it with spec.resourceClaims[].resourceClaimTemplateName",
        )
    claims = pod_spec.get("resourceClaims")
    declared = set()
    if isinstance(claims, list):
        for index, claim in enumerate(claims):
            if not isinstance(claim, dict):
                continue
            declared.add(claim.get("name"))
            for key in sorted(set(claim) - _POD_CLAIM_FIELDS):
                findings.error(
                    "invalid-pod-claim-field",
                    json_path(*base, "resourceClaims", index, key),
                    f"resourceClaims[].{key} is not a field: an entry has name plus exactly one of "
                    "resourceClaimName or resourceClaimTemplateName; claim specs go into a ResourceClaim(Template)",
                )
    for kind, index, container in pod_containers(pod_spec):
        _check_container(container, (*base, kind, index), declared, findings)


def _check_container(container: dict[str, Any], where: PathParts, declared: set[Any], findings: Findings) -> None:
    for env_index, env in enumerate(container.get("env") or []):
        ref = ((env or {}).get("valueFrom") or {}).get("resourceFieldRef") if isinstance(env, dict) else None
        resource = ref.get("resource") if isinstance(ref, dict) else None
        if isinstance(resource, str) and resource.startswith("claims."):
            findings.error(
                "invalid-claim-field-ref",
                json_path(*where, "env", env_index, "valueFrom", "resourceFieldRef", "resource"),
                f"resourceFieldRef {resource!r} does not exist: it only exposes limits/requests of cpu, memory, "
                "ephemeral-storage and hugepages; the DRA driver passes device details to the container (CDI)",
            )
    resources = container.get("resources")
    claims = resources.get("claims") if isinstance(resources, dict) else None
    for claim_index, claim in enumerate(claims or []):
        if isinstance(claim, dict) and claim.get("name") not in declared:
            findings.error(
                "unknown-container-claim",
                json_path(*where, "resources", "claims", claim_index, "name"),
                f"container claim {claim.get('name')!r} must be one of the names in spec.resourceClaims",
            )
