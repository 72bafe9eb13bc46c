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
    "properties": {
        "mode": {"enum": [m.value for m in Mode]},
        "apiUnavailable": {"enum": ["deny", "admit"]},
        # Deprecated: the top-level `strategy` decides with the cluster's DeviceClasses (webhook/extended.py).
        "extendedResourceClasses": {"enum": ["warn", "skip"], "deprecated": True},
        "quotaGap": {"enum": [q.value for q in QuotaGap]},
        "excludedNamespaces": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
            "uniqueItems": True,
        },
        "maxTemplatesPerNamespace": {"type": "integer", "minimum": 1, "maximum": 100_000},
        "apiTimeoutSeconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 30},
        # Templates dra-migrate made that no pod references are marked after this long, and deleted
        # after as long again (webhook/collector.py; at least 90 s to be safe under load).
        "unusedTemplateGraceSeconds": {"type": "number", "minimum": 1, "maximum": 604_800},
        # Accepted so older files still load; the caches now follow a watch and need no expiry.
        "cacheSeconds": {"type": "number", "minimum": 0, "deprecated": True},
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
    unused_template_grace_seconds: float = 600.0
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
        unused_template_grace_seconds=float(hook.get("unusedTemplateGraceSeconds", 600.0)),
        deprecated=tuple(key for key in ("cacheSeconds", "extendedResourceClasses") if key in hook),
    )


WEBHOOK_SECTION = Section("webhook", WEBHOOK_SCHEMA, parse_webhook_policy)
register_section(WEBHOOK_SECTION)
