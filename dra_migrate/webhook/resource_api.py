"""The Kubernetes API calls the webhook makes, as an interface, plus what their failures mean.

The review logic depends only on this module, so it runs against the real client
(webhook/kube_client.py) or an in-memory store (tests/common/fakekube.py) unchanged.

Reads are plain JSON objects (dicts), in whatever version the resource is asked for; the
webhook never needs typed models, and skipping them keeps a watch of thousands of objects cheap.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dra_migrate.engine import RESOURCE_GROUP


@dataclass(frozen=True, slots=True)
class ApiResource:
    """One resource type of the API: where its objects live."""

    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    # Only metadata is read (labels): asked for as PartialObjectMetadata, so the server sends no spec
    # or status (the answer's objects have apiVersion meta.k8s.io/v1; their metadata is the object's).
    metadata_only: bool = False

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """`/api/v1/namespaces/ns/resourcequotas`, `/apis/resource.k8s.io/v1/deviceclasses/x`, ..."""
        out = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace is not None and self.namespaced:
            out += f"/namespaces/{namespace}"
        out += f"/{self.plural}"
        return f"{out}/{name}" if name else out

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


NAMESPACES = ApiResource("", "v1", "namespaces", namespaced=False, metadata_only=True)
PODS = ApiResource("", "v1", "pods", namespaced=True)
RESOURCE_QUOTAS = ApiResource("", "v1", "resourcequotas", namespaced=True)


def claim_templates(version: str) -> ApiResource:
    return ApiResource(RESOURCE_GROUP, version, "resourceclaimtemplates", namespaced=True)


def device_classes(version: str) -> ApiResource:
    return ApiResource(RESOURCE_GROUP, version, "deviceclasses", namespaced=False)


class Failure(enum.Enum):
    """What an API error means for the pod under review (each gets its own message and decision)."""

    UNAVAILABLE = "unavailable"  # no answer, a timeout, 5xx, 429: an outage -> webhook.apiUnavailable
    FORBIDDEN = "forbidden"  # 403: a ResourceQuota, RBAC, or a namespace being deleted
    NOT_FOUND = "not_found"  # 404: the namespace, or the resource version, does not exist
    REJECTED = "rejected"  # any other 4xx: the apiserver refused the object itself


class ApiError(Exception):
    """A call that did not give an answer we can use.

    `reason` is a short metric label; `status` the HTTP status (None when there was no answer);
    `status_reason` and `details_kind` come from the apiserver's Status body when it sent one.
    """

    def __init__(
        self,
        operation: str,
        reason: str,
        detail: str,
        *,
        status: int | None = None,
        status_reason: str = "",
        details_kind: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{operation}: {detail}")
        self.operation = operation
        self.reason = reason
        self.detail = detail
        self.status = status
        self.status_reason = status_reason
        self.details_kind = details_kind
        self.retry_after = retry_after  # seconds the server asked to wait (429, 503: details.retryAfterSeconds)

    @property
    def failure(self) -> Failure:
        if self.status is None or self.status >= 500 or self.status == 429:
            return Failure.UNAVAILABLE
        if self.status == 403:
            return Failure.FORBIDDEN
        if self.status == 404:
            return Failure.NOT_FOUND
        return Failure.REJECTED

    @property
    def quota_exceeded(self) -> bool:
        # The ResourceQuota admission plugin's message: `exceeded quota: <name>, requested: ...`.
        return self.status == 403 and "exceeded quota" in self.detail


def status_error(operation: str, status: int, body: Any) -> ApiError:
    """The ApiError for an HTTP error status with (maybe) a Kubernetes Status body."""
    body = body if isinstance(body, Mapping) else {}
    details = body.get("details")
    details = details if isinstance(details, Mapping) else {}
    message = str(body.get("message") or f"HTTP {status}")
    if status == 409 and body.get("reason", "AlreadyExists") == "AlreadyExists":
        return AlreadyExistsError(operation, message)
    return ApiError(
        operation,
        f"http_{status}",
        f"HTTP {status}: {message}",
        status=status,
        status_reason=str(body.get("reason") or ""),
        details_kind=str(details.get("kind") or ""),
        retry_after=_seconds(details.get("retryAfterSeconds")),
    )


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


class AlreadyExistsError(ApiError):
    """HTTP 409 on create: someone (maybe another replica) created it first."""

    def __init__(self, operation: str, detail: str = "already exists") -> None:
        super().__init__(operation, "already_exists", detail, status=409, status_reason="AlreadyExists")


class GoneError(ApiError):
    """HTTP 410 on a watch: the resourceVersion is too old, list again."""

    def __init__(self, operation: str, detail: str = "resource version too old") -> None:
        super().__init__(operation, "gone", detail, status=410, status_reason="Expired")


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str = ""


WatchEvent = tuple[str, dict[str, Any]]  # (ADDED | MODIFIED | DELETED | BOOKMARK, object)

# A watch is asked to end after WATCH_SECONDS, times up to WATCH_JITTER (so workers do not reconnect
# in step), and resumed from the last resourceVersion seen: the server's end of a watch is a sign of
# life at least every WATCH_SECONDS * WATCH_JITTER = 10 s, whatever the cluster does. Bookmarks could
# not give that bound: kube-apiserver's watch cache schedules one a minute (k8s.io/apiserver
# pkg/storage/cacher: defaultBookmarkFrequency) but drops those not newer than the watch's start
# (cacheWatcher.process), and a quiet resource's version only moves on etcd's progress notifications,
# every 10 minutes by default (etcd server/etcdserver/api/v3rpc: progressReportInterval). Resuming a
# watch from a recent resourceVersion is served from the watch cache, without a list.
WATCH_SECONDS = 8
WATCH_JITTER = 1.25
# How long a watch may stay silent (no event, no bookmark, no end of a watch, no successful list)
# before its copy is distrusted: the answers then go to the API directly, and the watch's read times
# out, so the copy is listed again over a new connection. A connection that stopped forwarding
# (a restarted load balancer or NAT forgets its flows, and nothing reports it) is found within it.
WATCH_SILENCE_SECONDS = 15.0


class ResourceApi(Protocol):
    """Every call takes its own timeout, so the caller can bound a whole review.

    Raises ApiError (AlreadyExistsError on a 409 create, GoneError on an expired watch).
    """

    def get(self, resource: ApiResource, namespace: str | None, name: str, timeout: float) -> dict[str, Any] | None:
        """The object, or None when the API answers 404 for it."""
        ...

    def create(
        self, resource: ApiResource, namespace: str, body: dict[str, Any], timeout: float, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """The stored object; with `dry_run`, the apiserver's answer to `dryRun=All`: every check of
        a real create (admission, quota, validation), nothing stored."""
        ...

    def patch(
        self, resource: ApiResource, namespace: str, name: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386); a `metadata.resourceVersion` in it makes it conditional (409)."""
        ...

    def delete_exactly(
        self, resource: ApiResource, namespace: str, name: str, timeout: float, *, uid: str, resource_version: str
    ) -> None:
        """Delete only that object in that version (preconditions: 409 when it changed, 404 when gone)."""
        ...

    def list_page(
        self,
        resource: ApiResource,
        namespace: str | None,
        timeout: float,
        *,
        label_selector: str = "",
        limit: int = 500,
        continue_token: str = "",
    ) -> Page:
        """One page of a list, across all namespaces when `namespace` is None."""
        ...

    def watch(
        self, resource: ApiResource, resource_version: str, timeout_seconds: int, *, label_selector: str = ""
    ) -> Iterator[WatchEvent]:
        """Changes after `resource_version`, all namespaces, until the server ends the watch; with
        `label_selector`, only of the objects it selects (one that stops matching arrives as DELETED).

        Asks for bookmarks, and raises ApiError when nothing arrives for WATCH_SILENCE_SECONDS, which
        a live watch never exceeds as long as `timeout_seconds` is at most WATCH_SECONDS * WATCH_JITTER.
        """
        ...

    def server_version(self, timeout: float) -> dict[str, Any]:
        """GET /version."""
        ...


def list_pages(
    api: ResourceApi, resource: ApiResource, namespace: str | None, timeout: float, *, label_selector: str = ""
) -> Iterator[Page]:
    """The pages of a list one after the other, so that a caller keeping a few fields of each object
    never holds more than one page of whole objects."""
    page = api.list_page(resource, namespace, timeout, label_selector=label_selector)
    yield page
    while page.continue_token:
        page = api.list_page(
            resource, namespace, timeout, label_selector=label_selector, continue_token=page.continue_token
        )
        yield page


def list_all(
    api: ResourceApi, resource: ApiResource, namespace: str | None, timeout: float, *, label_selector: str = ""
) -> Page:
    """Every page of a list; the resourceVersion of the first page (the snapshot the list is from)."""
    pages = list_pages(api, resource, namespace, timeout, label_selector=label_selector)
    first = next(pages)
    items = list(first.items)
    for page in pages:
        items.extend(page.items)
    return Page(items, first.resource_version)
