"""ResourceClaimTemplates of Helm hooks: created by the hook phase that needs them, before the hook.

Helm creates a hook (a pre-install Job, a test Pod) before the release's other resources, and
Helm 4 hands hooks to the post-renderer with them: a template appended beside a hook would be an
ordinary resource, created after the hook whose pods need it, so the hook's pods could never get
their claims. A hook's templates are therefore hooks of the same events, weighted one below it
(Helm runs a phase's hooks by weight, then name: helm pkg/action/hooks.go `hookByWeight`), with
its delete policy (deleted with it after the phase), and named after it so that another resource
needing the same devices keeps a template of its own. Pure: objects in, objects out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

HOOK = "helm.sh/hook"
WEIGHT = "helm.sh/hook-weight"
DELETE_POLICY = "helm.sh/hook-delete-policy"
MAX_NAME = 253


def hook_annotations(obj: Any) -> dict[str, str] | None:
    """The Helm hook annotations of an object; None when it is no hook."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or not isinstance(annotations.get(HOOK), str) or not annotations[HOOK]:
        return None
    return {k: str(v) for k, v in annotations.items() if k in (HOOK, WEIGHT, DELETE_POLICY) and v is not None}


def _weight(annotations: dict[str, str]) -> int:
    """Helm reads the weight with strconv.Atoi, anything else being 0."""
    text = annotations.get(WEIGHT, "").strip()
    sign = text[:1] if text[:1] in "+-" else ""
    digits = text[len(sign) :]
    return int(text) if digits.isdigit() and digits.isascii() else 0


def hook_templates(
    obj: dict[str, Any], out: dict[str, Any], pod_specs: Iterable[dict[str, Any]], templates: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """`templates` as the hook `obj` needs them: renamed after it, their references in its converted
    form `out` (whose pod specs are `pod_specs`) renamed too, and made hooks of its events."""
    annotations = hook_annotations(obj)
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if annotations is None or not templates or not isinstance(name, str) or not name:
        return templates
    renamed = {t["metadata"]["name"]: f"{t['metadata']['name']}-{name}"[:MAX_NAME].rstrip("-.") for t in templates}
    for spec in pod_specs:
        for claim in spec.get("resourceClaims") or ():
            if isinstance(claim, dict) and claim.get("resourceClaimTemplateName") in renamed:
                claim["resourceClaimTemplateName"] = renamed[claim["resourceClaimTemplateName"]]
    hooked = {HOOK: annotations[HOOK], WEIGHT: str(_weight(annotations) - 1)}
    if DELETE_POLICY in annotations:
        hooked[DELETE_POLICY] = annotations[DELETE_POLICY]
    out_templates = []
    for template in templates:
        own = dict(template["metadata"])
        own["name"] = renamed[own["name"]]
        own["annotations"] = {**(own.get("annotations") or {}), **hooked}
        out_templates.append({**template, "metadata": own})
    return out_templates
