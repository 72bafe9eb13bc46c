"""Opting a Pod or a Namespace out of conversion.

Keys (value exactly "true"):
- Pod label `dra-migrate.io/skip`: the MutatingWebhookConfiguration's objectSelector keeps
  the pod away from the webhook; the server checks it too, for other webhook configurations.
- Pod annotation `dra-migrate.io/skip`: only the server can see annotations; checked here.
- Namespace label `dra-migrate.io/skip`: the namespaceSelector keeps the whole namespace away;
  the server checks it too (webhook/namespaces.py), for requests that bypass the selector.

Namespace annotations are NOT honoured: the server keeps only namespace labels from its watch,
the same as the selector can see. Label the namespace instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SKIP_KEY = "dra-migrate.io/skip"
SKIP_VALUE = "true"


def opt_out_reason(pod: Mapping[str, Any]) -> str | None:
    """Which opt-out applies to this pod, as "label ..." / "annotation ...", or None."""
    metadata = pod.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    for where in ("labels", "annotations"):
        values = metadata.get(where)
        if isinstance(values, Mapping) and values.get(SKIP_KEY) == SKIP_VALUE:
            return f"pod {where[:-1]} {SKIP_KEY}={SKIP_VALUE}"
    return None
