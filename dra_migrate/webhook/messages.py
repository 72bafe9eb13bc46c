"""Findings -> the response's `warnings` (shown by kubectl) and `auditAnnotations` (audit log).

Limits that shape this module:
- kube-apiserver may truncate warnings over 256 characters and long lists of them, and a
  warning is one HTTP header value: one line of printable ASCII each, and at most a few.
- audit annotation keys are prefixed by the apiserver with the webhook name
  (`pods.dra-migrate.io/<key>`), so a key is the name part of a qualified name: no `/`,
  63 characters at most; values are strings, kept short here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence

from dra_migrate.engine import Finding, Severity

PREFIX = "dra-migrate"
MAX_WARNINGS = 10
MAX_WARNING_CHARS = 256
MAX_ANNOTATION_CHARS = 1024

_ANNOTATION_KEY = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]+")


def _flattened(text: str) -> str:
    return " ".join(_UNPRINTABLE.sub(" ", text).split())


# Pods of one spec get the same messages, review after review. Clients choose part of the text
# (names), so the cache holds short texts only: 1,024 of at most 512 characters, 2 MiB at worst.
_flattened_cached = functools.lru_cache(maxsize=1024)(_flattened)
_CACHED_CHARS = 512


def one_line(text: str, limit: int) -> str:
    """Printable ASCII on one line, cut to `limit` characters with a visible mark."""
    flat = _flattened_cached(text) if len(text) <= _CACHED_CHARS else _flattened(text)
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _label(finding: Finding, audit: bool) -> str:
    if finding.severity is Severity.INFO:
        return f"{PREFIX} (audit mode, not applied):" if audit else f"{PREFIX}:"
    return f"{PREFIX} {finding.severity}:"


def warnings_for(findings: Iterable[Finding], *, audit: bool = False, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """One line per finding (changes first, then problems), plus `extra` lines, capped in number."""
    ordered = sorted(findings, key=lambda f: f.severity is not Severity.INFO)
    lines = [one_line(f"{_label(f, audit)} {f.message}", MAX_WARNING_CHARS) for f in ordered]
    lines += [one_line(f"{PREFIX} warning: {text}", MAX_WARNING_CHARS) for text in extra]
    if len(lines) > MAX_WARNINGS:
        hidden = len(lines) - (MAX_WARNINGS - 1)
        lines = [*lines[: MAX_WARNINGS - 1], f"{PREFIX}: {hidden} more messages in the audit log"]
    return tuple(lines)


def joined(texts: Iterable[str]) -> str:
    return one_line("; ".join(texts), MAX_ANNOTATION_CHARS)


def audit_annotations(values: Mapping[str, str]) -> dict[str, str]:
    """Validated keys, short one-line values; empty values are left out."""
    out: dict[str, str] = {}
    for key, value in values.items():
        if not _ANNOTATION_KEY.fullmatch(key):
            raise ValueError(f"invalid audit annotation key {key!r}")
        if value:
            out[key] = one_line(value, MAX_ANNOTATION_CHARS)
    return out


def changes(findings: Iterable[Finding]) -> list[str]:
    return [f.message for f in findings if f.severity is Severity.INFO]


def problems(findings: Iterable[Finding]) -> list[str]:
    return [f"{f.severity}: {f.message}" for f in findings if f.severity is not Severity.INFO]
