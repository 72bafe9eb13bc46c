"""Deterministic, collision-free Kubernetes names (DNS-1123 labels, docs/dra-api.md section 4 "Names")."""

from __future__ import annotations

import re
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    # hashlib loads OpenSSL, a few milliseconds of every start: CPython's own SHA-256 module first,
    # as CPython's `random` does for SHA-512 (_sha256 up to 3.11, _sha2 since 3.12); the digest is the same.
    try:
        from _sha2 import sha256
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256

LABEL_MAX = 63


def short_hash(text: str, length: int = 8) -> str:
    return sha256(text.encode()).hexdigest()[:length]


def to_label(text: str, max_length: int = LABEL_MAX) -> str:
    """Lower-case DNS label; too long -> cut and end with a hash of the full text so cuts never collide."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"
    if len(label) <= max_length:
        return label
    suffix = short_hash(text)
    return f"{label[: max_length - len(suffix) - 1].rstrip('-')}-{suffix}"


class TakenLabels(set[str]):
    """Labels in use, plus the next free number of each numbered base, so that numbering
    n labels of one base costs n steps rather than n squared."""

    def __init__(self, labels: Iterable[str] = ()) -> None:
        super().__init__(labels)
        self.next_number: dict[str, int] = {}


def unique_label(base: str, taken: Container[str]) -> str:
    """`base`, else `base-2`, `base-3`... each still a valid label."""
    candidate = to_label(base)
    if candidate not in taken:
        return candidate
    numbers = taken.next_number if isinstance(taken, TakenLabels) else {}
    number = numbers.get(base, 2)
    while True:
        tail = f"-{number}"
        candidate = f"{to_label(base, LABEL_MAX - len(tail))}{tail}"
        number += 1
        if candidate not in taken:
            numbers[base] = number
            return candidate
