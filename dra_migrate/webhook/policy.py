"""The `webhook:` section of the configuration file: how the admission webhook decides.

Registered with the configuration loader on import (`WEBHOOK_SECTION`); pure and standard-library
only, so that every command can validate this section cheaply (a misspelt key is an error
whichever command reads the file).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dra_migrate.configsections import Section, register_section

# The server adds the namespace it runs in (webhook/server.py), as the MutatingWebhookConfiguration's
# namespaceSelector excludes it too.
DEFAULT_EXCLUDED_NAMESPACES = ("kube-system",)
DEFAULT_MAX_TEMPLATES_PER_NAMESPACE = 64


class Mode(enum.StrEnum):
    """What the webhook does with a pod it would convert (webhook/modes.py has one handler each)."""

    ENFORCE = "enforce"  # patch the pod, create its templates
    AUDIT = "audit"  # no patch, no API writes: warnings and audit annotations say what enforce would do


class QuotaGap(enum.StrEnum):
    """What to do when converting would take a pod out of a ResourceQuota (webhook/quota.py)."""

    DENY = "deny"
    WARN = "warn"
    CONVERT = "convert"


WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "how the admission webhook decides",
    "properties": {
        "mode": {
            "enum": [m.value for m in Mode],
            "default": Mode.ENFORCE.value,
            "description": "enforce: mutate pods and create their templates; audit: warnings and audit annotations "
            "only, the in-cluster dry run before switching on",
        },
        "apiUnavailable": {
            "enum": ["deny", "admit"],
            "default": "deny",
            "description": "when the Kubernetes API does not answer (no answer, a timeout, 5xx, 429): refuse the "
            "pod, or admit it unconverted with a warning; any other API error refuses the pod",
        },
        # Deprecated: the top-level `strategy` decides with the cluster's DeviceClasses (webhook/extended.py).
        "extendedResourceClasses": {
            "enum": ["warn", "skip"],
            "deprecated": True,
            "description": "replaced by the top-level strategy, which the webhook applies with the cluster's "
            "DeviceClasses; skip still leaves every name a DeviceClass serves to the scheduler, warn does nothing",
        },
        "quotaGap": {
            "enum": [q.value for q in QuotaGap],
            "default": QuotaGap.DENY.value,
            "description": "a ResourceQuota that converted pods would escape: refuse the pod naming the quota key "
            "to add, convert with a warning, or convert silently",
        },
        "excludedNamespaces": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
            "uniqueItems": True,
            "default": list(DEFAULT_EXCLUDED_NAMESPACES),
            "description": "namespaces whose pods are never converted (as the namespaceSelector); the server adds "
            "the namespace it runs in",
        },
        "maxTemplatesPerNamespace": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100_000,
            "default": DEFAULT_MAX_TEMPLATES_PER_NAMESPACE,
            "description": "ResourceClaimTemplates the webhook creates per namespace, at most",
        },
        "apiTimeoutSeconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 30,
            "default": 2,
            "description": "the timeout of one Kubernetes API call; a review's calls share twice this, cut to what "
            "is left of the review's 4.5 s",
        },
        # Accepted so older files still load; the caches now follow a watch and need no expiry.
        "cacheSeconds": {
            "type": "number",
            "minimum": 0,
            "deprecated": True,
            "description": "no effect: the server's copies of the cluster follow a watch",
        },
    },
}


@dataclass(frozen=True, slots=True)
class WebhookPolicy:
    mode: Mode = Mode.ENFORCE
    api_unavailable: Literal["deny", "admit"] = "deny"
    extended_resource_classes: Literal["warn", "skip"] = "warn"
    quota_gap: QuotaGap = QuotaGap.DENY
    excluded_namespaces: tuple[str, ...] = DEFAULT_EXCLUDED_NAMESPACES
    max_templates_per_namespace: int = DEFAULT_MAX_TEMPLATES_PER_NAMESPACE
    api_timeout_seconds: float = 2.0
    deprecated: tuple[str, ...] = ()  # keys given that no longer do anything, for a startup warning


def parse_webhook_policy(section: Mapping[str, Any] | None) -> WebhookPolicy:
    """Build the policy from a section already validated against WEBHOOK_SCHEMA."""
    hook = section or {}
    return WebhookPolicy(
        mode=Mode(hook.get("mode", Mode.ENFORCE)),
        api_unavailable=hook.get("apiUnavailable", "deny"),
        extended_resource_classes=hook.get("extendedResourceClasses", "warn"),
        quota_gap=QuotaGap(hook.get("quotaGap", QuotaGap.DENY)),
        excluded_namespaces=tuple(hook.get("excludedNamespaces", DEFAULT_EXCLUDED_NAMESPACES)),
        max_templates_per_namespace=int(hook.get("maxTemplatesPerNamespace", DEFAULT_MAX_TEMPLATES_PER_NAMESPACE)),
        api_timeout_seconds=float(hook.get("apiTimeoutSeconds", 2.0)),
        deprecated=tuple(key for key in ("cacheSeconds", "extendedResourceClasses") if key in hook),
    )


WEBHOOK_SECTION = Section("webhook", WEBHOOK_SCHEMA, parse_webhook_policy)
register_section(WEBHOOK_SECTION)
