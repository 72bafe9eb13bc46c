"""Deterministic, collision-free Kubernetes names (DNS-1123 labels, docs/dra-api.md section 4 "Names")."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

LABEL_MAX = 63


def short_hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def to_label(text: str, max_length: int = LABEL_MAX) -> str:
    """Lower-case DNS label; too long -> cut and end with a hash of the full text so cuts never collide."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"
    if len(label) <= max_length:
        return label
    suffix = short_hash(text)
    return f"{label[: max_length - len(suffix) - 1].rstrip('-')}-{suffix}"


def unique_label(base: str, taken: Container[str]) -> str:
    """`base`, else `base-2`, `base-3`... each still a valid label."""
    candidate = to_label(base)
    number = 2
    while candidate in taken:
        tail = f"-{number}"
        candidate = f"{to_label(base, LABEL_MAX - len(tail))}{tail}"
        number += 1
    return candidate
