"""DeviceClasses that already serve a device-plugin resource name through DRA (KEP-5004).

A DeviceClass with `spec.extendedResourceName: nvidia.com/gpu` lets the scheduler satisfy
`nvidia.com/gpu: 2` from DRA without any pod change. Converting such a resource as well is
not wrong, but the user should know; with `extendedResourceClasses: skip` the webhook leaves
those names to the scheduler.

The list is read by a background thread per worker, every `cache_seconds`, with the API
timeout: admission never waits for it (except briefly for the very first list of a fresh
worker), and a failed list keeps the previous answer and never fails admission.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from dra_migrate.engine import Config, leave_unconverted
from dra_migrate.webhook.resource_api import ApiError

log = logging.getLogger(__name__)

MIN_REFRESH_SECONDS = 1.0
# A failed list is retried sooner than a normal refresh, but not in a tight loop.
RETRY_SECONDS = 10.0
# How long the first review of a fresh worker waits for the first list; with the review's own
# API budget (2 x apiTimeoutSeconds = 4 s by default) it stays inside the webhook's 5 s timeout.
FIRST_LIST_WAIT_SECONDS = 0.5

ClassesByResource = Mapping[str, tuple[str, ...]]


def classes_by_resource(device_classes: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """extendedResourceName -> names of the DeviceClasses that set it (sorted)."""
    found: dict[str, list[str]] = {}
    for device_class in device_classes:
        spec = device_class.get("spec")
        resource = spec.get("extendedResourceName") if isinstance(spec, dict) else None
        name = (device_class.get("metadata") or {}).get("name")
        if isinstance(resource, str) and resource and isinstance(name, str):
            found.setdefault(resource, []).append(name)
    return {resource: tuple(sorted(names)) for resource, names in found.items()}


def skip_reason(resource: str, classes: tuple[str, ...]) -> str:
    return (
        f"DeviceClass {', '.join(classes)} serves {resource} through spec.extendedResourceName (KEP-5004); "
        "left to the scheduler (webhook.extendedResourceClasses: skip)"
    )


def without_resources(config: Config, served: ClassesByResource) -> Config:
    """`config` with the `served` names kept as they are, so the engine keeps and reports them."""
    return leave_unconverted(config, {name: skip_reason(name, classes) for name, classes in served.items()})


class ExtendedResourceIndex:
    """Latest known `classes_by_resource` of the cluster, refreshed in the background."""

    def __init__(
        self,
        list_device_classes: Callable[[float], list[dict[str, Any]]] | None,
        *,
        refresh_seconds: float,
        timeout: float,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
        first_wait: float = FIRST_LIST_WAIT_SECONDS,
    ) -> None:
        self._list = list_device_classes
        self._refresh = max(refresh_seconds, MIN_REFRESH_SECONDS)
        self._timeout = timeout
        self._on_api_error = on_api_error
        self._first_wait = min(first_wait, timeout)
        self._current: dict[str, tuple[str, ...]] = {}
        self._first_done = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._last_error: str | None = None

    def start(self) -> None:
        """Start the refresher in this process (call after fork); idempotent."""
        if self._list is None:
            self._first_done.set()
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deviceclass-refresh", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def current(self) -> ClassesByResource:
        if not self._first_done.is_set():
            self.start()
            self._first_done.wait(self._first_wait)
        return self._current

    def refresh_once(self) -> None:
        """List now; on ApiError keep the previous answer (and re-raise)."""
        assert self._list is not None
        try:
            self._current = classes_by_resource(self._list(self._timeout))
            self._last_error = None
        except ApiError as exc:
            self._on_api_error(exc.operation, exc.reason)
            if exc.detail != self._last_error:
                log.warning("cannot list DeviceClasses (keeping the previous list): %s", exc.detail)
            self._last_error = exc.detail
            raise
        finally:
            # Reviews waiting for the first answer go on, with the list or without it.
            self._first_done.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh_once()
                wait = self._refresh
            except ApiError:
                wait = min(self._refresh, RETRY_SECONDS)
            except Exception:
                log.exception("unexpected error while listing DeviceClasses")
                wait = min(self._refresh, RETRY_SECONDS)
            self._stop.wait(wait)
