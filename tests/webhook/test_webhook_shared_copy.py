"""One watched copy of the cluster per pod: the watcher process writes it into a file, the workers read it.

In process: a WatchCache whose storage is the file (the watcher's side) and a SharedCopy on another
connection (a worker's side) agree on every object, generation and state, and a reader distrusts a
copy whose watcher went silent as it would distrust a silent watch. On a real `serve`: one list and
one watch per resource whatever the number of workers, a watcher that dies is replaced, and none
outlives the server.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from admission import make_review
from fakekube import FakeKube, FakeKubeServer
from pods import gpu_pod
from polling import wait_for, wait_until
from webhook_support import ServerProcess, StartServer, decoded_patch, watch_stale, watcher_pids, watching, worker_pids

from dra_migrate.webhook import sharedcopy
from dra_migrate.webhook.namespaces import namespace_labels
from dra_migrate.webhook.resource_api import NAMESPACES, WATCH_SILENCE_SECONDS, claim_templates
from dra_migrate.webhook.templates import MANAGED_SELECTOR, TemplateRecord, template_record
from dra_migrate.webhook.watchcache import CopyState, WatchCache

TEMPLATES = claim_templates("v1")
QUOTA_MESSAGE = "ResourceQuota team-a/gpu-quota limits requests.nvidia.com/gpu"


def _managed_template(name: str, namespace: str = "team-a", resource_version: str = "") -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "dra-migrate"},
    }
    if resource_version:
        metadata["resourceVersion"] = resource_version
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
    }


def _watched_into(path: Path, fake: FakeKube) -> tuple[WatchCache[Any], WatchCache[Any]]:
    storage = sharedcopy.writer(path)
    namespaces: WatchCache[Any] = WatchCache(fake, NAMESPACES, namespace_labels, timeout=5, storage=storage(NAMESPACES))
    templates: WatchCache[Any] = WatchCache(
        fake, TEMPLATES, template_record, timeout=5, label_selector=MANAGED_SELECTOR, storage=storage(TEMPLATES)
    )
    for cache in (namespaces, templates):
        cache.start()
        assert cache.wait_synced(10)
    return namespaces, templates


@pytest.fixture
def copy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sharedcopy, "STATE_SECONDS", 0.0)  # each read sees the watcher's latest state
    return sharedcopy.create(tmp_path)


def test_a_worker_reads_what_the_watcher_keeps(copy_file: Path) -> None:
    fake = FakeKube()
    fake.add_namespace("team-a", {"tier": "gpu"})
    first = fake.add_template(_managed_template("gpu-1"), "team-a")
    watched = _watched_into(copy_file, fake)
    try:
        views = sharedcopy.SharedCopies(copy_file)
        namespaces = views(NAMESPACES, namespace_labels, "")
        templates = views(TEMPLATES, template_record, MANAGED_SELECTOR)
        assert namespaces.synced and templates.synced
        assert namespaces.get(None, "team-a") == watched[0].get(None, "team-a")
        assert (namespaces.get(None, "team-a") or {}).get("tier") == "gpu"
        assert templates.get("team-a", "gpu-1") == watched[1].get("team-a", "gpu-1")
        assert templates.items("team-a") == [template_record(first)]

        before = templates.generation
        second = fake.add_template(_managed_template("gpu-2", namespace="team-b"), "team-b")
        wait_until(lambda: templates.get("team-b", "gpu-2") is not None, what="the new template in the file")
        assert templates.generation != before
        assert sorted(templates.items(None), key=lambda record: record.uid) == sorted(
            [template_record(first), template_record(second)], key=lambda record: record.uid
        )

        fake.delete("resourceclaimtemplates", "team-a", "gpu-1")
        wait_until(lambda: templates.get("team-a", "gpu-1") is None, what="the deletion in the file")
    finally:
        for cache in watched:
            cache.stop()


def test_a_copy_of_another_version_or_a_silent_watcher_is_not_trusted(
    copy_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeKube()
    watched = _watched_into(copy_file, fake)
    for cache in watched:
        cache.stop()
    views = sharedcopy.SharedCopies(copy_file)
    assert views(TEMPLATES, template_record, MANAGED_SELECTOR).synced
    assert not views(claim_templates("v1beta2"), template_record, MANAGED_SELECTOR).synced  # another release's
    silent = time.monotonic() + WATCH_SILENCE_SECONDS + 1
    monkeypatch.setattr(time, "monotonic", lambda: silent)
    view = views(NAMESPACES, namespace_labels, "")
    assert not view.synced
    assert view.silence > WATCH_SILENCE_SECONDS


def test_a_dead_watcher_is_distrusted_and_its_successor_numbers_on(copy_file: Path) -> None:
    fake = FakeKube()
    first = _watched_into(copy_file, fake)
    for cache in first:
        cache.stop()
    view = sharedcopy.SharedCopies(copy_file)(TEMPLATES, template_record, MANAGED_SELECTOR)
    generation = view.generation
    sharedcopy.distrust_all(copy_file)
    assert not view.synced
    second = _watched_into(copy_file, fake)  # a new watcher's copies start again at generation 1
    try:
        assert view.synced
        assert view.generation > generation
    finally:
        for cache in second:
            cache.stop()


def test_a_template_the_worker_created_is_known_until_the_watcher_has_it(copy_file: Path) -> None:
    fake = FakeKube()
    created = fake.add_template(_managed_template("gpu-1"), "team-a")
    version = int(created["metadata"]["resourceVersion"])
    watcher = sharedcopy.writer(copy_file)(TEMPLATES)  # a watcher that has applied everything before it
    watcher.publish(CopyState(True, time.monotonic(), 1, version - 1))
    view = sharedcopy.SharedCopies(copy_file)(TEMPLATES, template_record, MANAGED_SELECTOR)
    generation = view.generation
    view.observe(created)
    assert view.get("team-a", "gpu-1") == template_record(created)
    assert view.items("team-a") == [template_record(created)]
    assert view.generation != generation

    view.observe(_managed_template("gpu-0", resource_version=str(version - 1)))  # applied, perhaps deleted since
    assert view.get("team-a", "gpu-0") is None

    watcher.publish(CopyState(True, time.monotonic(), 2, version))  # the watcher applied it: here, gone since
    assert view.get("team-a", "gpu-1") is None
    assert view.items("team-a") == []


def test_only_the_copies_records_are_ever_built_from_the_file() -> None:
    assert sharedcopy.decode(sharedcopy.encode(TemplateRecord("u", "k", True))) == TemplateRecord("u", "k", True)

    with pytest.raises(pickle.UnpicklingError, match=r"not a record of the cluster copy: posix\.system"):
        sharedcopy.decode(pickle.dumps(os.system))


def test_a_failed_read_is_neither_remembered_nor_trusted(copy_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = TemplateRecord("uid-1", "key")
    watcher = sharedcopy.writer(copy_file)(TEMPLATES)
    watcher.replace({"team-a": {"gpu-1": record}}, CopyState(True, time.monotonic(), 1, 5))
    view = sharedcopy.SharedCopies(copy_file)(TEMPLATES, template_record, MANAGED_SELECTOR)
    monkeypatch.setattr(sharedcopy, "STATE_SECONDS", 60.0)  # the state read now is kept a minute
    assert view.synced
    readable = sharedcopy._items

    def broken(*args: Any) -> list[Any]:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sharedcopy, "_items", broken)
    assert view.items("team-a") == []
    assert not view.synced  # not trusted, though the state read before said synced
    monkeypatch.setattr(sharedcopy, "_items", readable)
    monkeypatch.setattr(sharedcopy, "STATE_SECONDS", 0.0)
    assert view.synced
    assert view.items("team-a") == [record]  # read again: the failure was not remembered


class _FullDisk:
    """A copy's storage on a file that cannot be written for the first `failures` writes."""

    def __init__(self, inner: Any, failures: int) -> None:
        self._inner = inner
        self.failures = failures

    def _write(self, write: Any, *args: Any) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise sqlite3.OperationalError("database or disk is full")
        write(*args)

    def replace(self, *args: Any) -> None:
        self._write(self._inner.replace, *args)

    def put(self, *args: Any) -> None:
        self._write(self._inner.put, *args)

    def delete(self, *args: Any) -> None:
        self._write(self._inner.delete, *args)

    def publish(self, *args: Any) -> None:
        self._write(self._inner.publish, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_watch_goes_on_when_its_file_cannot_be_written_for_a_while(copy_file: Path) -> None:
    fake = FakeKube()
    fake.add_namespace("team-a")
    storage = _FullDisk(sharedcopy.writer(copy_file)(NAMESPACES), failures=2)  # the list's, then the mark's
    cache: WatchCache[Any] = WatchCache(fake, NAMESPACES, namespace_labels, timeout=5, storage=storage)
    cache.start()
    try:
        assert cache.wait_synced(10), "the watch ended with its first failed write"
        assert storage.failures == 0
        view = sharedcopy.SharedCopies(copy_file)(NAMESPACES, namespace_labels, "")
        assert view.synced and view.get(None, "team-a") is not None
    finally:
        cache.stop()


def test_a_failed_write_leaves_no_transaction_open(copy_file: Path) -> None:
    copy = sharedcopy.writer(copy_file)(TEMPLATES)
    other = sqlite3.connect(copy_file)
    other.execute("ALTER TABLE copies RENAME TO hidden")  # the state cannot be written
    other.commit()
    with pytest.raises(sqlite3.Error):
        copy.put("team-a", "gpu-1", TemplateRecord("uid-1", "key"), CopyState(True, time.monotonic(), 1, 1))
    other.execute("ALTER TABLE hidden RENAME TO copies")
    other.commit()
    other.close()
    copy.put("team-a", "gpu-2", TemplateRecord("uid-2", "key"), CopyState(True, time.monotonic(), 2, 2))
    view = sharedcopy.SharedCopies(copy_file)(TEMPLATES, template_record, MANAGED_SELECTOR)
    assert view.get("team-a", "gpu-1") is None  # rolled back with the state it came with
    assert view.get("team-a", "gpu-2") == TemplateRecord("uid-2", "key")


# --- a real server ---


def _watcher_pids(server: ServerProcess) -> list[int]:
    return [int(pid) for pid in re.findall(r"watcher process (\d+): watching", server.log())]


def _lists(fake: FakeKube, plural: str) -> int:
    """The lists of `plural` in all namespaces (a copy's; reviews read one namespace)."""
    return sum(
        1
        for method, path in list(fake.calls)
        if method == "GET"
        and path.split("?")[0].endswith(f"/{plural}")
        and "/namespaces/" not in path.split("?")[0]
        and "watch=true" not in path
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


@pytest.mark.parametrize("workers", [2, 4])
def test_one_list_and_one_watch_per_resource_whatever_the_workers(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, workers: int
) -> None:
    fake = fake_kube.fake
    fake.add_namespace("team-a")
    server = start_server(kubeconfig=kubeconfig, workers=workers)
    watching(fake, "resourceclaimtemplates", "namespaces", "resourcequotas", "deviceclasses")
    for _ in range(2 * workers):  # reviews reach every worker; all read the one copy
        assert decoded_patch(server.review(make_review(gpu_pod(), namespace="team-a")))
    for plural in ("resourceclaimtemplates", "namespaces", "resourcequotas", "deviceclasses"):
        assert _lists(fake, plural) == 1, (plural, _lists(fake, plural))
    assert fake.calls_to("POST", "resourceclaimtemplates") == 1  # created once, then found in the copy
    assert len(_watcher_pids(server)) == 1
    assert len(watcher_pids(server)) == 1
    # gunicorn starts the workers one after another; the server is ready with the first
    wait_until(lambda: len(worker_pids(server)) == workers, what=f"{workers} workers")


def test_a_watcher_that_dies_is_replaced_and_none_outlives_the_server(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake = fake_kube.fake
    fake.add_namespace("team-a")
    server = start_server(kubeconfig=kubeconfig, workers=2)
    watching(fake, "namespaces")
    [first] = _watcher_pids(server)
    os.kill(first, signal.SIGKILL)
    # Meanwhile the workers ask the API: the review is answered as before.
    assert decoded_patch(server.review(make_review(gpu_pod(), namespace="team-a")))
    wait_until(lambda: len(_watcher_pids(server)) == 2, what="a new watcher process")
    second = _watcher_pids(server)[1]
    wait_until(lambda: _lists(fake, "namespaces") == 2, what="the new watcher's list")
    assert f"watcher process {first} exited" in server.log()
    assert server.stop() == 0
    wait_until(lambda: not _alive(second), what="the watcher to end with the server")


def test_a_hung_watcher_is_distrusted_within_the_bound(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """A watcher that stops (SIGSTOP: it neither exits nor writes) while a GPU quota is created: the
    workers stop trusting its copy within 15 s of its last sign of life and read the quota from the API."""
    fake = fake_kube.fake
    fake.add_namespace("team-a")
    server = start_server(kubeconfig=kubeconfig, workers=2)
    watching(fake, "resourcequotas", "namespaces", "resourceclaimtemplates")
    [watcher] = watcher_pids(server)
    assert decoded_patch(server.review(make_review(gpu_pod(), namespace="team-a", dry_run=True)))
    os.kill(watcher, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        fake.add_quota("team-a", "gpu-quota", {"requests.nvidia.com/gpu": "1"})

        def refused() -> bool:
            answer = server.review(make_review(gpu_pod(), namespace="team-a", dry_run=True))
            return not answer["allowed"] and QUOTA_MESSAGE in answer["status"]["message"]

        wait_for(refused, timeout=WATCH_SILENCE_SECONDS + 15, interval=0.5, what="the quota's refusal")
        # The watch's last sign of life may be up to 10 s (a watch's length) older than the stop.
        assert time.monotonic() - stopped <= WATCH_SILENCE_SECONDS + 5
        # The workers report what the stopped watcher cannot.
        wait_until(lambda: watch_stale(server, "resourcequotas") == 1.0, timeout=5, what="the copy reported stale")
    finally:
        os.kill(watcher, signal.SIGCONT)
