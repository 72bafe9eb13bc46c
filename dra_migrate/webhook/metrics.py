"""Prometheus metrics of the webhook.

gunicorn runs several worker processes, so `serve` points PROMETHEUS_MULTIPROC_DIR at a fresh
temporary directory before prometheus_client is imported: every worker writes its samples
there, and /metrics (answered by any worker) adds them up. Without the variable (tests,
in-process use) the ordinary in-memory registry is used.

    dra_migrate_webhook_reviews_total{outcome}                  AdmissionReviews answered
    dra_migrate_webhook_conversions_total{resource,mode}        resource names converted
    dra_migrate_webhook_review_duration_seconds                 /mutate latency (histogram)
    dra_migrate_webhook_refusal_duration_seconds                from a review's arrival to its refusal under
                                                                overload (histogram; webhook/shedding.py)
    dra_migrate_webhook_templates_created_total                 ResourceClaimTemplates created
    dra_migrate_webhook_api_errors_total{operation,reason}      failed Kubernetes API calls
    dra_migrate_webhook_certificate_expiration_timestamp_seconds  notAfter of the served
                                                                certificate (latest loaded)
    dra_migrate_webhook_certificate_reload_failures_total       rotated TLS files not taken
    dra_migrate_webhook_watch_events_total{resource,type}       changes applied to the server's watched
                                                                copies of the cluster (webhook/cluster.py)
    dra_migrate_webhook_watch_stale{resource}                   1 while a watched copy is not trusted (not
                                                                listed yet, or silent for over 15 s): the
                                                                answers read the API directly
    dra_migrate_webhook_watch_silence_seconds{resource}         seconds since its watch last heard from the API
    dra_migrate_webhook_connections_closed_total{reason}        connections the server closed to keep
                                                                slots free (webhook/connections.py)

Every label value comes from a fixed set: `resource` is a name the configuration maps exactly
(`set_known_resources`) or `other`, since pods choose their resource names (a pattern
mapping matches unboundedly many) and each new value is a new series in every worker's file.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ParamSpec

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
log = logging.getLogger(__name__)
_P = ParamSpec("_P")

REVIEWS = Counter("dra_migrate_webhook_reviews", "AdmissionReviews answered, by outcome.", ["outcome"])
CONVERSIONS = Counter(
    "dra_migrate_webhook_conversions",
    "Device-plugin resource names converted to claims per pod (mode=audit: would have been).",
    ["resource", "mode"],
)
LATENCY = Histogram(
    "dra_migrate_webhook_review_duration_seconds",
    "Time to answer POST /mutate, from the parsed request to the encoded response.",
    buckets=(0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
# From the arrival (webhook/arrivals.py), not the parsed request: what a refused review waited is
# the queue the refusal is about; its answer should come within milliseconds.
REFUSAL_LATENCY = Histogram(
    "dra_migrate_webhook_refusal_duration_seconds",
    "Time from a review's arrival to its refusal under overload (HTTP 429), queueing included.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
TEMPLATES_CREATED = Counter("dra_migrate_webhook_templates_created", "ResourceClaimTemplates created.")
API_ERRORS = Counter(
    "dra_migrate_webhook_api_errors",
    "Kubernetes API calls that failed (timeouts, unreachable, error statuses).",
    ["operation", "reason"],
)

CERTIFICATE_EXPIRATION = Gauge(
    "dra_migrate_webhook_certificate_expiration_timestamp_seconds",
    "notAfter of the TLS certificate served, as a Unix time (the one a worker loaded last).",
    # Not "livemin": the gunicorn master holds the metric too, never set (0).
    multiprocess_mode="livemostrecent",
)
CERTIFICATE_RELOAD_FAILURES = Counter(
    "dra_migrate_webhook_certificate_reload_failures",
    "Changed TLS certificate files that were not taken (unreadable, mismatched, expired or not yet valid).",
)

WATCH_EVENTS = Counter(
    "dra_migrate_webhook_watch_events",
    "Changes applied to the watched copies of the cluster, by resource and event type (a silent watch "
    "shows as no increase while the cluster changes).",
    ["resource", "type"],
)

WATCH_STALE = Gauge(
    "dra_migrate_webhook_watch_stale",
    "1 while a watched copy of the cluster is not trusted (not listed yet, or its watch silent for over 15 s): "
    "the answers read the API directly. The largest of the live processes (the watcher and the workers).",
    ["resource"],
    multiprocess_mode="livemax",
)
WATCH_SILENCE = Gauge(
    "dra_migrate_webhook_watch_silence_seconds",
    "Seconds since the watch of a copy of the cluster last heard from the API (event, bookmark, end of a "
    "watch, list). The largest of the live processes (the watcher and the workers).",
    ["resource"],
    multiprocess_mode="livemax",
)
NEVER_HEARD_SECONDS = 1e9  # the silence shown before a copy's first list

CONNECTIONS_CLOSED = Counter(
    "dra_migrate_webhook_connections_closed",
    "Connections closed to keep connection slots free: client_over_share (closed before its handshake), "
    "reclaimed_waiting (the longest waiting for a request, when slots ran short).",
    ["reason"],
)
CLIENT_OVER_SHARE = "client_over_share"
RECLAIMED_WAITING = "reclaimed_waiting"
for _reason in (CLIENT_OVER_SHARE, RECLAIMED_WAITING):  # 0 from the start, so the first closure shows in rate()
    CONNECTIONS_CLOSED.labels(_reason)

INVALID_OUTCOME = "invalid"
SHED_OUTCOME = "shed_overloaded"
OTHER_RESOURCE = "other"
_known_resources: frozenset[str] = frozenset()


def set_known_resources(names: Iterable[str]) -> None:
    """The resource label values besides `other`: the names the configuration maps exactly."""
    global _known_resources
    _known_resources = frozenset(names)


def resource_label(name: str) -> str:
    return name if name in _known_resources else OTHER_RESOURCE


def _never_raises(record: Callable[_P, None]) -> Callable[_P, None]:
    """Metrics are for people: a failure to record one must not change an admission answer."""

    @functools.wraps(record)
    def safe(*args: _P.args, **kwargs: _P.kwargs) -> None:
        try:
            record(*args, **kwargs)
        except Exception:
            log.exception("cannot record metric %s", record.__name__)

    return safe


# A labelled child, looked up once per label value (every value comes from a fixed set).
_review_counter = functools.lru_cache(maxsize=128)(REVIEWS.labels)
_conversion_counter = functools.lru_cache(maxsize=128)(CONVERSIONS.labels)


@_never_raises
def record_review(outcome: str, seconds: float, converted: Iterable[str] = (), mode: str = "enforce") -> None:
    _review_counter(outcome).inc()
    LATENCY.observe(seconds)
    for resource in converted:
        _conversion_counter(resource_label(resource), mode).inc()


@_never_raises
def record_refusal(seconds: float) -> None:
    """A review refused under overload, `seconds` after it arrived."""
    record_review(SHED_OUTCOME, seconds)
    REFUSAL_LATENCY.observe(seconds)


@_never_raises
def template_created() -> None:
    TEMPLATES_CREATED.inc()


@_never_raises
def api_error(operation: str, reason: str) -> None:
    API_ERRORS.labels(operation, reason).inc()


@_never_raises
def certificate_loaded(not_after_timestamp: float) -> None:
    CERTIFICATE_EXPIRATION.set(not_after_timestamp)


@_never_raises
def certificate_reload_failed() -> None:
    CERTIFICATE_RELOAD_FAILURES.inc()


@_never_raises
def connections_closed(reason: str, count: int = 1) -> None:
    CONNECTIONS_CLOSED.labels(reason).inc(count)


class _StartedFilesCollector(multiprocess.MultiProcessCollector):
    """The workers' sample files, minus those a starting worker has created but not yet sized.

    prometheus_client opens a worker's file, then extends it to its initial size (mmap_dict.py,
    MmapedDict.__init__); read in between, the file is empty, holds no samples, and made the
    whole /metrics answer 500 (struct.error). A file never shrinks, so one seen non-empty reads.
    """

    def __init__(self, registry: CollectorRegistry, path: str) -> None:
        super().__init__(registry, path)  # type: ignore[no-untyped-call]
        self._directory = Path(path)

    def collect(self) -> Iterable[Any]:
        files = []
        for file in self._directory.glob("*.db"):
            with contextlib.suppress(OSError):  # a dead worker's live-gauge file, removed meanwhile
                if file.stat().st_size > 0:
                    files.append(str(file))
        return self.merge(files, accumulate=True)  # type: ignore[no-any-return,no-untyped-call]


_multiprocess_registry: CollectorRegistry | None = None


def exposition() -> tuple[bytes, str]:
    """The text format body and its content type, summed over all workers when multiprocess."""
    global _multiprocess_registry
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        if _multiprocess_registry is None:
            _multiprocess_registry = CollectorRegistry()
            _StartedFilesCollector(_multiprocess_registry, directory)
        return generate_latest(_multiprocess_registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def worker_exited(pid: int) -> None:
    """gunicorn child_exit hook: drop the dead worker's live-gauge files (counters are kept)."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


_WATCHED = frozenset({"resourceclaimtemplates", "namespaces", "resourcequotas", "deviceclasses"})
_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


@_never_raises
def watch_event(resource: str, kind: str) -> None:
    """One change applied to a watched copy (resource and type from fixed sets)."""
    WATCH_EVENTS.labels(resource if resource in _WATCHED else "other", kind if kind in _EVENT_TYPES else "other").inc()


@_never_raises
def watch_staleness(resource: str, silence: float, stale: bool) -> None:
    """How long a watched copy has been silent, and whether it is trusted (resource from a fixed set)."""
    name = resource if resource in _WATCHED else "other"
    WATCH_STALE.labels(name).set(1 if stale else 0)
    WATCH_SILENCE.labels(name).set(min(silence, NEVER_HEARD_SECONDS))
