"""Pod DRA fields of Kubernetes <= 1.30 (docs/dra-api.md section 3.1): flatten `resourceClaims[].source`."""

from __future__ import annotations

from typing import Any

from dra_migrate.engine.findings import Findings, PathParts, json_path

_SOURCE_FIELDS = ("resourceClaimName", "resourceClaimTemplateName")


def flatten_claim_sources(pod_spec: dict[str, Any], base: PathParts, findings: Findings) -> bool:
    claims = pod_spec.get("resourceClaims")
    if not isinstance(claims, list):
        return False
    changed = False
    for index, claim in enumerate(claims):
        if not isinstance(claim, dict) or "source" not in claim:
            continue
        path = json_path(*base, "resourceClaims", index, "source")
        source = claim["source"]
        values = {k: source[k] for k in _SOURCE_FIELDS if isinstance(source, dict) and source.get(k)}
        clash = [k for k in _SOURCE_FIELDS if claim.get(k)]
        if len(values) != 1 or clash:
            findings.error(
                "legacy-claim-source-invalid",
                path,
                "source must set exactly one of resourceClaimName or resourceClaimTemplateName and the entry "
                "must not also set the 1.31+ fields; left as is",
            )
            continue
        del claim["source"]
        claim.update(values)
        field = next(iter(values))
        findings.info("legacy-claim-source", path, f"source.{field} -> {field} (Pod API 1.31+)")
        changed = True
    return changed
