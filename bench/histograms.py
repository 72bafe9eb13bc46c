"""Prometheus histograms read from /metrics text: what one gained between two scrapes, its quantiles as
histogram_quantile interpolates them, and the bucket a quantile lies in (bench/cluster_scale.py,
bench/webhook.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Buckets = dict[str, dict[float, float]]  # sample kind (bucket le / sum / count) -> value


def histogram(metrics_text: str, family_name: str, labels: Mapping[str, str]) -> Buckets:
    """One histogram summed over the label sets that match `labels`."""
    out: Buckets = {"bucket": {}, "sum": {}, "count": {}}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != family_name:
            continue
        for sample in family.samples:
            if any(sample.labels.get(key) != value for key, value in labels.items()):
                continue
            kind = sample.name.removeprefix(family_name + "_")
            if kind == "bucket":
                upper = float(sample.labels["le"])
                out["bucket"][upper] = out["bucket"].get(upper, 0.0) + sample.value
            elif kind in ("sum", "count"):
                out[kind][0.0] = out[kind].get(0.0, 0.0) + sample.value
    return out


def quantile(buckets: Mapping[float, float], q: float) -> float | None:
    """histogram_quantile's linear interpolation inside the bucket that holds rank q."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for upper in bounds:
        count = buckets[upper]
        if count >= rank:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * ((rank - below) / max(count - below, 1e-12))
        lower, below = upper, count
    return lower


def bucket_of(buckets: Mapping[float, float], q: float) -> list[float] | None:
    """The bounds (ms) of the bucket holding rank q: an interpolated quantile is only known to
    lie between them."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    lower = 0.0
    for upper in bounds:
        if buckets[upper] >= q * buckets[bounds[-1]]:
            return [round(lower * 1000, 1), upper * 1000 if not math.isinf(upper) else math.inf]
        lower = upper
    return None


def latency_change(before: str, after: str, family_name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """Count, mean, p50 and p99 (ms) of what a histogram gained between two scrapes (`before` and
    `after` may each hold several processes' scrapes, one after the other: they add up)."""
    first, last = histogram(before, family_name, labels), histogram(after, family_name, labels)
    buckets = {le: value - first["bucket"].get(le, 0.0) for le, value in last["bucket"].items()}
    count = last["count"].get(0.0, 0.0) - first["count"].get(0.0, 0.0)
    total = last["sum"].get(0.0, 0.0) - first["sum"].get(0.0, 0.0)

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 1)

    return {
        "count": int(count),
        "mean_ms": ms(total / count) if count else None,
        "p50_ms": ms(quantile(buckets, 0.5)),
        "p99_ms": ms(quantile(buckets, 0.99)),
        "p99_bucket_ms": bucket_of(buckets, 0.99),
    }
