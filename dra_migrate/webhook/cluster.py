"""What a webhook worker knows about its cluster: the release it runs, and watched copies of it.

    target           the Kubernetes release, from GET /version (the configuration's targetVersion,
                     when given, wins): the resource.k8s.io version templates are written in, which
                     feature gates are on by default (migration strategy, quota charging rules)
    templates        every ResourceClaimTemplate (uid, spec digest, managed-by label)
    namespaces       every Namespace (labels only): the server-side namespace selection
    quotas           every ResourceQuota (names of its hard keys, scoped or not)
    device_classes   every DeviceClass that maps an extended resource name

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
from typing import Any

from dra_migrate.engine import Target, TargetVersionError
from dra_migrate.webhook.extended import ServingRecord, serving_record
from dra_migrate.webhook.namespaces import Labels, namespace_labels
from dra_migrate.webhook.quota import QuotaRecord, quota_record
from dra_migrate.webhook.resource_api import (
    NAMESPACES,
    RESOURCE_QUOTAS,
    ApiError,
    ResourceApi,
    claim_templates,
    device_classes,
)
from dra_migrate.webhook.templates import TemplateRecord, template_record
from dra_migrate.webhook.watchcache import WatchCache

log = logging.getLogger(__name__)

VERSION_RETRY_SECONDS = (1.0, 30.0)  # first and longest pause between reads of an unreadable version


@dataclass
class ClusterCaches:
    """The copies (None: ask the API) and the release, when known (None: the configured target)."""

    templates: WatchCache[TemplateRecord] | None = None
    namespaces: WatchCache[Labels] | None = None
    quotas: WatchCache[QuotaRecord] | None = None
    device_classes: WatchCache[ServingRecord | None] | None = None
    target: Target | None = None

    def all(self) -> list[WatchCache[Any]]:
        caches: list[WatchCache[Any] | None] = [self.templates, self.namespaces, self.quotas, self.device_classes]
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


class ClusterWatch:
    """Builds and starts the copies of one worker process (call `start` after the fork)."""

    def __init__(
        self,
        api: ResourceApi,
        configured: Target,
        *,
        detect_target: bool,
        timeout: float,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
        on_event: Callable[[str, str], None] = lambda resource, kind: None,
        on_alive: Callable[[str], None] = lambda resource: None,
    ) -> None:
        self._api = api
        self._on_event = on_event
        self._on_alive = on_alive
        self._configured = configured
        self._detect = detect_target
        self._timeout = timeout
        self._on_api_error = on_api_error
        self._stop = threading.Event()
        self.caches = ClusterCaches(
            namespaces=self._cache(NAMESPACES, namespace_labels),
            quotas=self._cache(RESOURCE_QUOTAS, quota_record),
        )

    def _cache(self, resource: Any, keep: Any) -> Any:
        return WatchCache(
            self._api,
            resource,
            keep,
            timeout=self._timeout,
            on_api_error=self._on_api_error,
            on_event=self._on_event,
            on_alive=self._on_alive,
        )

    def start(self) -> ClusterCaches:
        for cache in self.caches.all():
            cache.start()
        if not self._detect:
            self._watch_versioned(self._configured)
        else:
            threading.Thread(target=self._find_target, name="cluster-version", daemon=True).start()
        return self.caches

    def stop(self) -> None:
        self._stop.set()
        self.caches.stop()

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
        templates: WatchCache[TemplateRecord] = self._cache(claim_templates(version), template_record)
        classes: WatchCache[ServingRecord | None] = self._cache(device_classes(version), serving_record)
        templates.start()
        classes.start()
        self.caches.templates, self.caches.device_classes = templates, classes
