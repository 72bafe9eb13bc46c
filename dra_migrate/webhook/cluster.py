"""What a webhook worker knows about its cluster: the release it runs, and watched copies of it.

    target           the Kubernetes release, from GET /version (the configuration's targetVersion,
                     when given, wins): the resource.k8s.io version templates are written in, which
                     feature gates are on by default (migration strategy, quota charging rules)
    templates        the ResourceClaimTemplates dra-migrate made (its managed-by label selects them:
                     other tenants' templates are neither listed nor kept): uid, content digest
    namespaces       every Namespace (labels only): the server-side namespace selection
    quotas           every ResourceQuota (names of its hard keys, scoped or not)
    device_classes   every DeviceClass that maps an extended resource name

With `collect_unused_after`, the templates dra-migrate made that no pod uses are collected
(webhook/collector.py) by one worker of the process.

Where the copies come from is a CopySource: `WatchedCopies` lists and watches in this process
(tests, the watcher process of `serve`, which writes them into the file its workers share), and
sharedcopy.SharedCopies reads that file (the workers of `serve`: one copy per pod).

A copy whose watch has not heard from the API for 15 s is not trusted (webhook/watchcache.py): the
reviews ask the API directly, and dra_migrate_webhook_watch_stale{resource} shows it.

The copies are read-only list + watch (webhook/watchcache.py), which deploy/base/rbac.yaml
grants for exactly these. A copy that is missing or not current makes the review ask the API
directly, so tests can run without any. The copies of versioned resources (templates,
DeviceClasses) start once the release is known; until then, and for good when the version
cannot be read, the configured target is used.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dra_migrate.engine import Target, TargetVersionError
from dra_migrate.webhook.collector import TemplateCollector, lock_directory
from dra_migrate.webhook.extended import ServingRecord, serving_record
from dra_migrate.webhook.namespaces import Labels, namespace_labels
from dra_migrate.webhook.quota import QuotaRecord, quota_record
from dra_migrate.webhook.resource_api import (
    NAMESPACES,
    RESOURCE_QUOTAS,
    ApiError,
    ApiResource,
    ResourceApi,
    claim_templates,
    device_classes,
)
from dra_migrate.webhook.templates import MANAGED_SELECTOR, TemplateRecord, template_record
from dra_migrate.webhook.watchcache import ClusterCopy, Storage, WatchCache

log = logging.getLogger(__name__)

VERSION_RETRY_SECONDS = (1.0, 30.0)
STALENESS_REPORT_SECONDS = 1.0  # first and longest pause between reads of an unreadable version


@dataclass
class ClusterCaches:
    """The copies (None: ask the API) and the release, when known (None: the configured target)."""

    templates: ClusterCopy[TemplateRecord] | None = None
    namespaces: ClusterCopy[Labels] | None = None
    quotas: ClusterCopy[QuotaRecord] | None = None
    device_classes: ClusterCopy[ServingRecord | None] | None = None
    target: Target | None = None

    def all(self) -> list[ClusterCopy[Any]]:
        caches: list[ClusterCopy[Any] | None] = [self.templates, self.namespaces, self.quotas, self.device_classes]
        return [cache for cache in caches if cache is not None]

    def stop(self) -> None:
        for cache in self.all():
            cache.stop()


def target_from_version(answer: Mapping[str, Any]) -> Target:
    """The release of a GET /version answer; managed clusters add suffixes (`"minor": "34+"`,
    `gitVersion: v1.34.2-eks-1234`), which do not change the release."""
    major = re.match(r"\d+", str(answer.get("major") or ""))
    minor = re.match(r"\d+", str(answer.get("minor") or ""))
    if major and minor:
        return Target.parse(f"{major.group()}.{minor.group()}")
    found = re.match(r"v?(\d+)\.(\d+)", str(answer.get("gitVersion") or ""))
    if found:
        return Target.parse(f"{found.group(1)}.{found.group(2)}")
    raise TargetVersionError(f"no Kubernetes version in {dict(answer)!r}")


class CopySource(Protocol):
    """Makes the copy of one resource: kept by `keep`, of the objects `label_selector` selects."""

    def __call__(
        self, resource: ApiResource, keep: Callable[[Mapping[str, Any]], Any], label_selector: str
    ) -> ClusterCopy[Any]: ...


class WatchedCopies:
    """Copies listed and watched by this process, kept in its memory or in `storage_for(resource)`."""

    def __init__(
        self,
        api: ResourceApi,
        *,
        timeout: float,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
        on_event: Callable[[str, str], None] = lambda resource, kind: None,
        storage_for: Callable[[ApiResource], Storage[Any]] | None = None,
    ) -> None:
        self._api = api
        self._timeout = timeout
        self._on_api_error = on_api_error
        self._on_event = on_event
        self._storage_for = storage_for

    def __call__(
        self, resource: ApiResource, keep: Callable[[Mapping[str, Any]], Any], label_selector: str
    ) -> WatchCache[Any]:
        return WatchCache(
            self._api,
            resource,
            keep,
            timeout=self._timeout,
            label_selector=label_selector,
            on_api_error=self._on_api_error,
            on_event=self._on_event,
            storage=None if self._storage_for is None else self._storage_for(resource),
        )


class ClusterWatch:
    """Builds and starts the copies of one process (call `start` after the fork)."""

    def __init__(
        self,
        api: ResourceApi,
        configured: Target,
        *,
        detect_target: bool,
        timeout: float,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
        on_event: Callable[[str, str], None] = lambda resource, kind: None,
        on_staleness: Callable[[str, float, bool], None] = lambda resource, silence, stale: None,
        collect_unused_after: float | None = None,
        storage_for: Callable[[ApiResource], Storage[Any]] | None = None,
        copies: CopySource | None = None,
    ) -> None:
        """The copies are listed and watched here, kept in memory or in `storage_for(resource)`,
        unless `copies` makes them otherwise (a worker's views of the watcher's file)."""
        self._api = api
        self._copies = copies or WatchedCopies(
            api, timeout=timeout, on_api_error=on_api_error, on_event=on_event, storage_for=storage_for
        )
        self._on_staleness = on_staleness
        self._configured = configured
        self._detect = detect_target
        self._timeout = timeout
        self._on_api_error = on_api_error
        self._stop = threading.Event()
        self._collector = (
            None
            if collect_unused_after is None
            else TemplateCollector(
                api,
                lambda: self.caches.templates.resource if self.caches.templates is not None else None,
                grace_seconds=collect_unused_after,
                timeout=timeout,
                lock_directory=lock_directory(),
                on_api_error=on_api_error,
            )
        )
        self.caches = ClusterCaches(
            namespaces=self._cache(NAMESPACES, namespace_labels),
            quotas=self._cache(RESOURCE_QUOTAS, quota_record),
        )

    def _cache(self, resource: ApiResource, keep: Any, label_selector: str = "") -> Any:
        return self._copies(resource, keep, label_selector)

    def start(self) -> ClusterCaches:
        for cache in self.caches.all():
            cache.start()
        if not self._detect:
            self._watch_versioned(self._configured)
        else:
            threading.Thread(target=self._find_target, name="cluster-version", daemon=True).start()
        # Also where the copies are only read: a worker distrusts a watcher that hung, which the
        # watcher itself cannot report.
        threading.Thread(target=self._report_staleness, name="watch-staleness", daemon=True).start()
        if self._collector is not None:
            self._collector.start()
        return self.caches

    def _report_staleness(self) -> None:
        """Each second, how long each copy has been silent and whether it is trusted (metrics)."""
        while not self._stop.wait(STALENESS_REPORT_SECONDS):
            for cache in self.caches.all():
                self._on_staleness(cache.resource.plural, cache.silence, not cache.synced)

    def stop(self) -> None:
        self._stop.set()
        self.caches.stop()
        if self._collector is not None:
            self._collector.stop()

    def _find_target(self) -> None:
        pause, longest = VERSION_RETRY_SECONDS
        while not self._stop.is_set():
            try:
                target = target_from_version(self._api.server_version(self._timeout))
            except ApiError as exc:
                self._on_api_error(exc.operation, exc.reason)
                log.warning(  # once per pause, which grows
                    "cannot read the cluster's version (using targetVersion %s until it can be read): %s",
                    self._configured,
                    exc.detail,
                )
            except TargetVersionError as exc:
                log.warning("unusable cluster version, using targetVersion %s: %s", self._configured, exc)
                self._watch_versioned(self._configured)
                return
            else:
                log.info("cluster runs Kubernetes %s", target)
                self.caches.target = target
                self._watch_versioned(target)
                return
            self._stop.wait(pause)
            pause = min(pause * 2, longest)

    def _watch_versioned(self, target: Target) -> None:
        version = target.dra_version
        templates: ClusterCopy[TemplateRecord] = self._cache(
            claim_templates(version), template_record, MANAGED_SELECTOR
        )
        classes: ClusterCopy[ServingRecord | None] = self._cache(device_classes(version), serving_record)
        templates.start()
        classes.start()
        self.caches.templates, self.caches.device_classes = templates, classes
