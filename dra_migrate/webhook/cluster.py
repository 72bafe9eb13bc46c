"""The webhook's watched copies of the cluster (webhook/watchcache.py), one set per worker process.

    templates        every ResourceClaimTemplate (uid, spec digest, managed-by label)
    namespaces       every Namespace (labels only): the server-side namespace selection
    quotas           every ResourceQuota (names of its hard keys, scoped or not)
    device_classes   every DeviceClass (its extendedResourceName, if any)

Read-only: list and watch, which deploy/base/rbac.yaml grants for exactly these. A copy that
is missing or not current makes the review ask the API directly (tests run without copies).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from dra_migrate.webhook.extended import ServedName, served_name
from dra_migrate.webhook.namespaces import Labels, namespace_labels
from dra_migrate.webhook.quota import QuotaRecord, quota_record
from dra_migrate.webhook.resource_api import NAMESPACES, RESOURCE_QUOTAS, ResourceApi, claim_templates, device_classes
from dra_migrate.webhook.templates import TemplateRecord, template_record
from dra_migrate.webhook.watchcache import WatchCache


@dataclass
class ClusterCaches:
    templates: WatchCache[TemplateRecord] | None = None
    namespaces: WatchCache[Labels] | None = None
    quotas: WatchCache[QuotaRecord] | None = None
    device_classes: WatchCache[ServedName | None] | None = None

    def _all(self) -> list[WatchCache[object]]:
        return [cache for f in fields(self) if (cache := getattr(self, f.name)) is not None]

    def start(self) -> None:
        for cache in self._all():
            cache.start()

    def stop(self) -> None:
        for cache in self._all():
            cache.stop()


def watch_cluster(
    api: ResourceApi,
    dra_version: str,
    *,
    timeout: float,
    on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
) -> ClusterCaches:
    """The four copies (not started yet: start them in the worker process)."""
    return ClusterCaches(
        templates=WatchCache(
            api, claim_templates(dra_version), template_record, timeout=timeout, on_api_error=on_api_error
        ),
        namespaces=WatchCache(api, NAMESPACES, namespace_labels, timeout=timeout, on_api_error=on_api_error),
        quotas=WatchCache(api, RESOURCE_QUOTAS, quota_record, timeout=timeout, on_api_error=on_api_error),
        device_classes=WatchCache(
            api, device_classes(dra_version), served_name, timeout=timeout, on_api_error=on_api_error
        ),
    )
