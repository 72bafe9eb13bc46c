"""The three Kubernetes API calls the webhook makes, as an interface, plus their failures.

The review logic depends only on this module, so it runs against the real client
(webhook/kube_client.py) or an in-memory store (tests/common/fakekube.py) unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol

from dra_migrate.engine import RESOURCE_GROUP


class ApiError(Exception):
    """A call that did not give an answer we can use; `reason` is a short metric label."""

    def __init__(self, operation: str, reason: str, detail: str) -> None:
        super().__init__(f"{operation}: {detail}")
        self.operation = operation
        self.reason = reason
        self.detail = detail


class AlreadyExistsError(ApiError):
    """HTTP 409 on create: someone (maybe another replica) created it first."""

    def __init__(self, operation: str, detail: str = "already exists") -> None:
        super().__init__(operation, "already_exists", detail)


class ResourceApi(Protocol):
    """Every call takes its own timeout, so the caller can bound a whole review."""

    def get_template(self, api_version: str, namespace: str, name: str, timeout: float) -> dict[str, Any] | None:
        """The ResourceClaimTemplate, or None when it does not exist."""
        ...

    def create_template(self, template: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Create it in `template.metadata.namespace`; raises AlreadyExistsError on 409."""
        ...

    def list_device_classes(self, api_version: str, timeout: float) -> list[dict[str, Any]]: ...


def version_of(api_version: str) -> str:
    """`resource.k8s.io/v1` -> `v1`."""
    group, _, version = api_version.rpartition("/")
    if group != RESOURCE_GROUP or not version:
        raise ValueError(f"not a {RESOURCE_GROUP} apiVersion: {api_version!r}")
    return version
