"""The age of a watched copy: every sign of life of its list or watch is reported (the stale-watch
alert of deploy/monitoring reads it as dra_migrate_webhook_watch_alive_timestamp_seconds)."""

from __future__ import annotations

import threading
import time

from fakekube import FakeKube
from polling import wait_until
from prometheus_client import REGISTRY

from dra_migrate.webhook import metrics
from dra_migrate.webhook.namespaces import Labels, namespace_labels
from dra_migrate.webhook.resource_api import NAMESPACES
from dra_migrate.webhook.watchcache import WatchCache

GAUGE = "dra_migrate_webhook_watch_alive_timestamp_seconds"


class AliveLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.resources: list[str] = []

    def __call__(self, resource: str) -> None:
        with self._lock:
            self.resources.append(resource)

    def count(self) -> int:
        with self._lock:
            return len(self.resources)


def _namespaces(fake: FakeKube, alive: AliveLog) -> WatchCache[Labels]:
    return WatchCache(fake, NAMESPACES, namespace_labels, timeout=1.0, on_alive=alive)


def test_the_start_the_list_and_each_event_are_signs_of_life() -> None:
    fake, alive = FakeKube(), AliveLog()
    cache = _namespaces(fake, alive)
    try:
        cache.start()
        assert alive.resources[:1] == ["namespaces"]  # the start, before any list
        assert cache.wait_synced(5.0)
        wait_until(lambda: alive.count() >= 2, 5.0, "the list reported")
        listed = alive.count()
        fake.add_namespace("team-a")
        wait_until(lambda: cache.get(None, "team-a") is not None, 5.0, "the ADDED event applied")
        assert alive.count() > listed
        assert set(alive.resources) == {"namespaces"}
    finally:
        cache.stop()
        fake.close()


def test_a_watch_that_cannot_list_reports_only_its_start() -> None:
    fake, alive = FakeKube(fail_status=503, fail_message="etcd leader changed"), AliveLog()
    cache = _namespaces(fake, alive)
    try:
        cache.start()
        wait_until(lambda: fake.calls_to("GET", "namespaces") >= 2, 10.0, "a second failed list")
        assert alive.count() == 1 and not cache.synced
    finally:
        cache.stop()
        fake.close()


def test_watch_alive_sets_the_gauge_to_now() -> None:
    before = time.time()
    metrics.watch_alive("resourcequotas")
    metrics.watch_alive("pods")  # not a watched resource: one `other` series, not one per name
    after = time.time()
    for resource in ("resourcequotas", "other"):
        value = REGISTRY.get_sample_value(GAUGE, {"resource": resource})
        assert value is not None and before <= value <= after
    assert REGISTRY.get_sample_value(GAUGE, {"resource": "pods"}) is None
