"""The `webhook:` section of the configuration file: how the admission webhook decides.

Pure and standard-library only, so the configuration loader can validate this section for
every command (a misspelt key is an error whichever command reads the file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": ["enforce", "audit"]},
        "apiUnavailable": {"enum": ["deny", "admit"]},
        "extendedResourceClasses": {"enum": ["warn", "skip"]},
        "apiTimeoutSeconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 30},
        "cacheSeconds": {"type": "number", "minimum": 0},
    },
}


@dataclass(frozen=True, slots=True)
class WebhookPolicy:
    mode: Literal["enforce", "audit"] = "enforce"
    api_unavailable: Literal["deny", "admit"] = "deny"
    extended_resource_classes: Literal["warn", "skip"] = "warn"
    api_timeout_seconds: float = 2.0
    cache_seconds: float = 300.0


def parse_webhook_policy(section: Mapping[str, Any] | None) -> WebhookPolicy:
    """Build the policy from a section already validated against WEBHOOK_SCHEMA."""
    hook = section or {}
    return WebhookPolicy(
        mode=hook.get("mode", "enforce"),
        api_unavailable=hook.get("apiUnavailable", "deny"),
        extended_resource_classes=hook.get("extendedResourceClasses", "warn"),
        api_timeout_seconds=float(hook.get("apiTimeoutSeconds", 2.0)),
        cache_seconds=float(hook.get("cacheSeconds", 300.0)),
    )
