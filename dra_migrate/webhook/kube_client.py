"""ResourceApi over the official kubernetes client: the only module that talks to the cluster.

Where the API is: `--kubeconfig`, else KUBECONFIG, else the in-cluster service account,
else ~/.kube/config (controller-runtime's order). The client's configuration supplies the
address, TLS and credentials (including in-cluster token refresh); requests and answers
are plain JSON, so objects stay dicts in whatever version is asked for and a watch of
thousands of objects skips model deserialization. Retries are off: every call is bounded
by its own timeout, and the review decides what a failure means.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config import kube_config as kube_config_module
from kubernetes.config.config_exception import ConfigException

from dra_migrate.webhook.resource_api import (
    WATCH_SILENCE_SECONDS,
    ApiError,
    ApiResource,
    GoneError,
    Page,
    WatchEvent,
    status_error,
)

# Idle connections kept per worker: reviews run concurrently (gevent), and each watch holds one.
API_CONNECTIONS = 64
WATCH_CONNECT_TIMEOUT_SECONDS = 5


class KubeConfigError(Exception):
    """No usable Kubernetes API configuration."""


def load_configuration(kubeconfig: Path | None = None) -> k8s.Configuration:
    configuration = k8s.Configuration()
    default = Path("~/.kube/config").expanduser()
    try:
        if kubeconfig is not None:
            _load_kubeconfig(configuration, kubeconfig)
        elif os.environ.get("KUBECONFIG"):
            _load_kubeconfig(configuration, None)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        elif default.exists():
            _load_kubeconfig(configuration, default)
        else:
            raise KubeConfigError(
                "no Kubernetes API configuration: not running in a cluster, and no --kubeconfig, "
                "KUBECONFIG or ~/.kube/config"
            )
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        raise KubeConfigError(f"cannot load the Kubernetes API configuration: {exc}") from None
    _keep_credential_files()
    configuration.retries = False
    # Reviews run concurrently (gevent): keep up to this many idle API connections per worker
    # instead of dropping, with a warning each, all but cpu_count x 5 after a burst.
    configuration.connection_pool_maxsize = API_CONNECTIONS
    return configuration


def _keep_credential_files() -> None:
    """The client writes embedded certificate data (`certificate-authority-data`, client certificates)
    to temporary files and deletes them at exit. gunicorn forks the workers from this process, and
    a worker that exits (a reload, a timeout) would delete the files its siblings and the master
    still use, and every later API connection would fail: only the process that wrote them does."""
    global _KEEPING
    cleanup = getattr(kube_config_module, "_cleanup_temp_files", None)
    if cleanup is None:
        return
    atexit.unregister(cleanup)  # registered again by each load that writes a first file
    if not _KEEPING:
        _KEEPING = True
        writer = os.getpid()
        atexit.register(lambda: cleanup() if os.getpid() == writer else None)


_KEEPING = False


def remove_credential_files() -> None:
    """What `_keep_credential_files` leaves to exit, now: before an exec, which runs no exit handlers."""
    cleanup = getattr(kube_config_module, "_cleanup_temp_files", None)
    if cleanup is not None:
        cleanup()


def _load_kubeconfig(configuration: k8s.Configuration, path: Path | None) -> None:
    # persist_config=False: never write refreshed credentials back into the user's file.
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(path) if path else None, client_configuration=configuration, persist_config=False
    )


def _retry_after(headers: Any) -> float | None:
    """A Retry-After header in seconds (the HTTP-date form is not used by kube-apiserver)."""
    value = headers.get("Retry-After") if headers is not None else None
    try:
        seconds = float(value) if value is not None else 0.0
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _json_body(data: bytes) -> Any:
    try:
        return json.loads(data or b"null")
    except ValueError:
        return None


def _no_answer(operation: str, exc: Exception) -> ApiError:
    # NewConnectionError is a ConnectTimeoutError subclass in urllib3 2, but means "refused".
    if isinstance(exc, urllib3.exceptions.TimeoutError) and not isinstance(exc, urllib3.exceptions.NewConnectionError):
        return ApiError(operation, "timeout", f"the Kubernetes API did not answer in time ({exc})")
    if isinstance(exc, ApiException):  # raised by the REST layer for TLS errors, with status 0
        return ApiError(operation, "unreachable", str(exc.reason or exc))
    return ApiError(operation, "unreachable", f"cannot reach the Kubernetes API: {exc}")


class KubeResourceApi:
    """Thread-safe; the HTTP connection pool is created lazily in each (forked) process."""

    def __init__(self, configuration: k8s.Configuration) -> None:
        self._configuration = configuration
        self._lock = threading.Lock()
        self._pid = -1
        self._client: k8s.ApiClient | None = None

    def _api(self) -> k8s.ApiClient:
        if self._client is None or self._pid != os.getpid():
            with self._lock:
                if self._client is None or self._pid != os.getpid():
                    self._client = k8s.ApiClient(self._configuration)
                    self._pid = os.getpid()
        return self._client

    def _send(
        self,
        operation: str,
        method: str,
        path: str,
        timeout: float | tuple[float, float],
        *,
        query: list[tuple[str, str]] | None = None,
        body: dict[str, Any] | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        """The raw urllib3 response of a 2xx answer; raises ApiError otherwise."""
        client = self._api()
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            serialized = client.param_serialize(
                method, path, query_params=query or [], header_params=headers, body=body, auth_settings=["BearerToken"]
            )
            answer = client.call_api(*serialized, _request_timeout=timeout)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _no_answer(operation, exc) from None
        if not 200 <= answer.status <= 299:
            try:
                data = answer.read()  # type: ignore[no-untyped-call]
            except (urllib3.exceptions.HTTPError, OSError):
                data = b""
            error = status_error(operation, answer.status, _json_body(data))
            if error.retry_after is None:
                error.retry_after = _retry_after(answer.headers)
            raise error
        return answer

    def _json(
        self,
        operation: str,
        method: str,
        path: str,
        timeout: float,
        *,
        query: list[tuple[str, str]] | None = None,
        body: dict[str, Any] | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> dict[str, Any]:
        answer = self._send(
            operation, method, path, timeout, query=query, body=body, content_type=content_type, accept=accept
        )
        try:
            data = answer.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _no_answer(operation, exc) from None
        parsed = _json_body(data)
        if not isinstance(parsed, dict):
            raise ApiError(operation, "bad_response", f"expected a JSON object, got {type(parsed).__name__}")
        return parsed

    def get(self, resource: ApiResource, namespace: str | None, name: str, timeout: float) -> dict[str, Any] | None:
        try:
            path = resource.path(namespace, name)
            return self._json(f"get_{resource.plural}", "GET", path, timeout, accept=_accept(resource, "object"))
        except ApiError as exc:
            if exc.status == 404 and exc.details_kind in ("", resource.plural):
                return None
            raise

    def create(
        self, resource: ApiResource, namespace: str, body: dict[str, Any], timeout: float, *, dry_run: bool = False
    ) -> dict[str, Any]:
        query = [("dryRun", "All")] if dry_run else None
        path = resource.path(namespace)
        return self._json(f"create_{resource.plural}", "POST", path, timeout, query=query, body=body)

    def patch(
        self, resource: ApiResource, namespace: str, name: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        path = resource.path(namespace, name)
        return self._json(
            f"patch_{resource.plural}", "PATCH", path, timeout, body=body, content_type="application/merge-patch+json"
        )

    def delete_exactly(
        self, resource: ApiResource, namespace: str, name: str, timeout: float, *, uid: str, resource_version: str
    ) -> None:
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": uid, "resourceVersion": resource_version},
        }
        self._json(f"delete_{resource.plural}", "DELETE", resource.path(namespace, name), timeout, body=options)

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
        query = [("limit", str(limit))]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if continue_token:
            query.append(("continue", continue_token))
        path, accept = resource.path(namespace), _accept(resource, "list")
        page = self._json(f"list_{resource.plural}", "GET", path, timeout, query=query, accept=accept)
        metadata = page.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        items = [item for item in page.get("items") or [] if isinstance(item, dict)]
        return Page(items, str(metadata.get("resourceVersion") or ""), str(metadata.get("continue") or ""))

    def watch(
        self, resource: ApiResource, resource_version: str, timeout_seconds: int, *, label_selector: str = ""
    ) -> Iterator[WatchEvent]:
        operation = f"watch_{resource.plural}"
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if label_selector:
            query.append(("labelSelector", label_selector))
        # The read timeout bounds each read of the stream, not the whole watch: a live watch gets
        # a bookmark at least that often, a silently dead connection ends here instead of hanging
        # until the server's own end of the watch, which will never arrive.
        timeout = (WATCH_CONNECT_TIMEOUT_SECONDS, WATCH_SILENCE_SECONDS)
        answer = self._send(operation, "GET", resource.path(), timeout, query=query, accept=_accept(resource, "object"))
        raw = answer.response
        try:
            for line in _lines(raw):
                event = _json_body(line)
                if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                    continue
                kind, obj = str(event.get("type")), event["object"]
                if kind == "ERROR":
                    code = int(obj.get("code") or 0)
                    if code == 410:
                        raise GoneError(operation, str(obj.get("message") or "resource version too old"))
                    raise status_error(operation, code or 500, obj)
                yield kind, obj
        except urllib3.exceptions.ReadTimeoutError:
            # The idle pooled connections most likely went the same way (a restarted load balancer
            # or NAT forgets them all): drop them, so the direct reads that stand in for this
            # watch open new ones instead of waiting out their timeout on each dead one.
            self._api().rest_client.pool_manager.clear()
            raise ApiError(
                operation,
                "timeout",
                f"nothing (no event, no bookmark) for {WATCH_SILENCE_SECONDS:.0f}s: the connection is taken for dead",
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _no_answer(operation, exc) from None
        finally:
            # A watch left early still has unread data: close it rather than pool it for reuse.
            raw.close()
            raw.release_conn()

    def server_version(self, timeout: float) -> dict[str, Any]:
        return self._json("get_version", "GET", "/version", timeout)


def _accept(resource: ApiResource, form: str) -> str:
    """The Accept header for reading `resource`: metadata only when that is all that is read (a list
    is a PartialObjectMetadataList, an object or a watch event's object a PartialObjectMetadata),
    plain JSON after it for a server that cannot."""
    if not resource.metadata_only:
        return "application/json"
    kind = "PartialObjectMetadataList" if form == "list" else "PartialObjectMetadata"
    return f"application/json;as={kind};g=meta.k8s.io;v=v1,application/json"


def _lines(raw: Any) -> Iterator[bytes]:
    """Newline-separated JSON events of a streamed (chunked) response, as they arrive."""
    pending = b""
    for chunk in raw.stream(None, decode_content=True):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending
