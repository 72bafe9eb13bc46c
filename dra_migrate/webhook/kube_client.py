"""ResourceApi over the official kubernetes client: the only module that talks to the cluster.

Where the API is: `--kubeconfig`, else KUBECONFIG, else the in-cluster service account,
else ~/.kube/config (controller-runtime's order). Calls are generic (CustomObjectsApi), so
templates are plain dicts in whatever resource.k8s.io version the target uses. Retries are
off: every call is bounded by its own timeout, and the review decides what a failure means.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from dra_migrate.engine import RESOURCE_GROUP
from dra_migrate.webhook.resource_api import AlreadyExistsError, ApiError, version_of

_PAGE = 500
API_CONNECTIONS = 64


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
    configuration.retries = False
    # Reviews run concurrently (gevent): keep up to this many idle API connections per worker
    # instead of dropping, with a warning each, all but cpu_count x 5 after a burst.
    configuration.connection_pool_maxsize = API_CONNECTIONS
    return configuration


def _load_kubeconfig(configuration: k8s.Configuration, path: Path | None) -> None:
    # persist_config=False: never write refreshed credentials back into the user's file.
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(path) if path else None, client_configuration=configuration, persist_config=False
    )


def _message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "")
    except ValueError:
        body = None
    text = body.get("message") if isinstance(body, dict) else None
    return str(text or exc.reason or "no details")


def _translate(operation: str, exc: Exception) -> ApiError:
    if isinstance(exc, ApiException):
        status = exc.status or 0
        if status == 409:
            return AlreadyExistsError(operation, _message(exc))
        if status == 0:
            return ApiError(operation, "unreachable", str(exc.reason or exc))
        return ApiError(operation, f"http_{status}", f"HTTP {status}: {_message(exc)}")
    # NewConnectionError is a ConnectTimeoutError subclass in urllib3 2, but means "refused".
    if isinstance(exc, urllib3.exceptions.TimeoutError) and not isinstance(exc, urllib3.exceptions.NewConnectionError):
        return ApiError(operation, "timeout", f"the Kubernetes API did not answer in time ({exc})")
    return ApiError(operation, "unreachable", f"cannot reach the Kubernetes API: {exc}")


class KubeResourceApi:
    """Thread-safe; the HTTP connection pool is created lazily in each (forked) process."""

    def __init__(self, configuration: k8s.Configuration) -> None:
        self._configuration = configuration
        self._lock = threading.Lock()
        self._pid = -1
        self._objects: k8s.CustomObjectsApi | None = None

    def _custom(self) -> k8s.CustomObjectsApi:
        if self._objects is None or self._pid != os.getpid():
            with self._lock:
                if self._objects is None or self._pid != os.getpid():
                    self._objects = k8s.CustomObjectsApi(k8s.ApiClient(self._configuration))
                    self._pid = os.getpid()
        return self._objects

    def _call(self, operation: str, call: Callable[[], object]) -> dict[str, Any]:
        try:
            answer = call()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _translate(operation, exc) from None
        if not isinstance(answer, dict):
            raise ApiError(operation, "bad_response", f"expected a JSON object, got {type(answer).__name__}")
        return answer

    def get_template(self, api_version: str, namespace: str, name: str, timeout: float) -> dict[str, Any] | None:
        version = version_of(api_version)
        try:
            return self._call(
                "get_template",
                lambda: self._custom().get_namespaced_custom_object(
                    RESOURCE_GROUP, version, namespace, "resourceclaimtemplates", name, _request_timeout=timeout
                ),
            )
        except ApiError as exc:
            if exc.reason == "http_404":
                return None
            raise

    def create_template(self, template: dict[str, Any], timeout: float) -> dict[str, Any]:
        version = version_of(template["apiVersion"])
        namespace = template["metadata"]["namespace"]
        return self._call(
            "create_template",
            lambda: self._custom().create_namespaced_custom_object(
                RESOURCE_GROUP, version, namespace, "resourceclaimtemplates", template, _request_timeout=timeout
            ),
        )

    def list_device_classes(self, api_version: str, timeout: float) -> list[dict[str, Any]]:
        version = version_of(api_version)
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            try:
                page = self._list_page(version, token, timeout)
            except ApiError as exc:
                if exc.reason == "http_404":  # this resource.k8s.io version is not served: no classes
                    return []
                raise
            items.extend(item for item in page.get("items") or [] if isinstance(item, dict))
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def _list_page(self, version: str, token: str, timeout: float) -> dict[str, Any]:
        extra: dict[str, Any] = {"_continue": token} if token else {}
        return self._call(
            "list_deviceclasses",
            lambda: self._custom().list_cluster_custom_object(
                RESOURCE_GROUP, version, "deviceclasses", limit=_PAGE, _request_timeout=timeout, **extra
            ),
        )
