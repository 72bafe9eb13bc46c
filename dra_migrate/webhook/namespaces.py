"""Which namespaces the webhook converts pods in, decided by the server itself.

The MutatingWebhookConfiguration's namespaceSelector keeps kube-system, the webhook's own
namespace and namespaces labelled `dra-migrate.io/skip: "true"` away from the webhook, but a
client that POSTs to /mutate directly bypasses it. So the server applies the same selection
before anything is created: the namespaces named in `webhook.excludedNamespaces` (the deploy
test keeps them equal to the selector's) plus its own (webhook/server.py adds it), and the
namespace label, read from a watched copy
of the cluster's namespaces (their labels only), or from the API when the copy does not
have the namespace yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.optout import SKIP_KEY, SKIP_VALUE
from dra_migrate.webhook.resource_api import NAMESPACES, ApiError, ResourceApi
from dra_migrate.webhook.watchcache import ClusterCopy

Labels = Mapping[str, str]
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def own_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str | None:
    """The namespace this server runs in (its service account's), or None outside a cluster."""
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def namespace_labels(obj: Mapping[str, Any]) -> Labels:
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


class NamespaceSelection:
    def __init__(self, excluded: Iterable[str], api: ResourceApi, cache: ClusterCopy[Labels] | None = None) -> None:
        self._excluded = frozenset(excluded)
        self._api = api
        self._cache = cache

    def skip_reason(self, namespace: str, budget: Budget) -> str | None:
        """Why pods of `namespace` are left alone, or None when they are converted.

        Raises ApiError (404 with details kind `namespaces` when the namespace does not exist).
        """
        if namespace in self._excluded:
            return f"namespace {namespace} is excluded (webhook.excludedNamespaces)"
        labels = self._labels(namespace, budget)
        if labels.get(SKIP_KEY) == SKIP_VALUE:
            return f"namespace label {SKIP_KEY}={SKIP_VALUE}"
        return None

    def _labels(self, namespace: str, budget: Budget) -> Labels:
        if self._cache is not None and self._cache.synced:
            labels = self._cache.get(None, namespace)
            if labels is not None:
                return labels
        found = self._api.get(NAMESPACES, None, namespace, budget.timeout("get_namespaces"))
        if found is None:
            raise ApiError(
                "get_namespaces",
                "http_404",
                f'namespace "{namespace}" not found',
                status=404,
                status_reason="NotFound",
                details_kind="namespaces",
            )
        return namespace_labels(found)
