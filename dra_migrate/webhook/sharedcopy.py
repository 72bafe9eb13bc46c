"""One watched copy of the cluster for a whole `serve`, in a SQLite file its processes share.

Each gunicorn worker used to list and watch every copied resource itself, so a pod held one copy
per worker. Now a watcher process (webhook/watcher.py, started and restarted by the master) runs
the watches and writes what it keeps into this file; the workers read it. A pod holds one copy,
and makes one list and one watch per resource, whatever the number of workers.

    objects   (plural, namespace, name) -> the kept form (a few fields, pickled: only the record
              types of the copies are ever unpickled)
    copies    plural -> the copy's API version and state (synced, last sign of life, generation,
              newest resourceVersion applied)

WAL mode: the workers' reads never wait for the watcher's writes, and each read sees a committed
state. A reader trusts a copy only while the watcher says it is synced and its last sign of life
is under 15 s old (time.monotonic() is one clock for all processes of a host), so a watcher that
hangs or dies is distrusted within the same bound as a silent API, and the reviews ask the API.
The file is a cache: it is created empty when `serve` starts, and never read by anything else.
"""

from __future__ import annotations

import io
import logging
import pickle
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Generic, TypeVar

from dra_migrate.webhook.resource_api import WATCH_SILENCE_SECONDS, ApiResource
from dra_migrate.webhook.watchcache import CopyState, object_key

T = TypeVar("T")
log = logging.getLogger(__name__)

FILE_NAME = "cluster-copy.sqlite3"  # in the serve's private directory (not *.db: that is metrics')
# A reader waits this long at most for a lock (only while the file is created or its WAL recovered).
BUSY_TIMEOUT_MS = 50
# A worker reads a copy's state at most this often: a review asks for it several times, and 50 ms
# is nothing next to the 15 s a silent copy stays trusted. What it read from the copy is kept until
# the state shows a new generation (at most MEMO_ENTRIES lookups).
STATE_SECONDS = 0.05
MEMO_ENTRIES = 4096
READER_CACHE_KIB = 512  # each worker's page cache; the pages themselves are read through mmap
MMAP_BYTES = 256 * 1024 * 1024
# The write-ahead log is cut back to this after each checkpoint: the file lives in the pod's
# memory-backed /tmp, so a relist's worth of log must not stay there.
WAL_LIMIT_BYTES = 4 * 1024 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    plural TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (plural, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS copies (
    plural TEXT PRIMARY KEY, api_version TEXT NOT NULL, synced INTEGER NOT NULL, alive REAL NOT NULL,
    generation INTEGER NOT NULL, seen_version INTEGER NOT NULL
);
"""

# The kept forms of the copies (webhook/cluster.py): nothing else is ever built from the file.
_RECORD_TYPES = frozenset(
    {
        ("dra_migrate.webhook.templates", "TemplateRecord"),
        ("dra_migrate.webhook.quota", "QuotaRecord"),
        ("builtins", "frozenset"),
    }
)


class _RecordUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _RECORD_TYPES:
            raise pickle.UnpicklingError(f"not a record of the cluster copy: {module}.{name}")
        return super().find_class(module, name)


def encode(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def decode(blob: bytes) -> Any:
    return _RecordUnpickler(io.BytesIO(blob)).load()


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA synchronous=OFF")  # a cache: a crash of the machine loses nothing that matters
    connection.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    connection.execute(f"PRAGMA cache_size=-{READER_CACHE_KIB}")
    connection.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    return connection


def create(directory: Path) -> Path:
    """A new, empty copy file in `directory` (the master does this before any process uses it)."""
    path = directory / FILE_NAME
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    connection = _connect(path)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.executescript(_SCHEMA)
    finally:
        connection.close()
    return path


def distrust_all(path: Path) -> None:
    """Mark every copy not synced (a watcher died: what it wrote last may be missing changes). Where
    the file cannot be written, the readers still distrust it 15 s after its last sign of life."""
    try:
        connection = _connect(path)
        try:
            connection.execute("UPDATE copies SET synced = 0")
        finally:
            connection.close()
    except sqlite3.Error as exc:
        log.warning("cannot mark the cluster copy not current (%s): the workers distrust it within 15 s", exc)


class StoredCopy(Generic[T]):
    """The watcher's side: a WatchCache's storage (webhook/watchcache.py) in the file. Changes are
    written in a transaction that `publish` commits with the copy's state."""

    def __init__(self, connection: sqlite3.Connection, lock: threading.Lock, resource: ApiResource) -> None:
        self._db = connection
        self._lock = lock  # the connection's: the copies of one watcher share it
        self._plural = resource.plural
        self._api_version = resource.api_version
        # Generations start from the clock in microseconds: a reader that derived something from
        # generation N must never see a different copy under the same number after a restart (the
        # master starts a watcher at most once a second; a copy changes far fewer than a million
        # times a second).
        self._generation_base = time.time_ns() // 1000

    def replace(self, fresh: dict[str, dict[str, T]], state: CopyState) -> None:
        rows = [
            (self._plural, namespace, name, encode(value))
            for namespace, objects in fresh.items()
            for name, value in objects.items()
        ]
        with self._writing(state):
            self._db.execute("DELETE FROM objects WHERE plural = ?", (self._plural,))
            self._db.executemany("INSERT INTO objects VALUES (?, ?, ?, ?)", rows)

    def put(self, namespace: str, name: str, value: T, state: CopyState) -> None:
        row = (self._plural, namespace, name, encode(value))
        with self._writing(state):
            self._db.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?)", row)

    def delete(self, namespace: str, name: str, state: CopyState) -> None:
        with self._writing(state):
            self._db.execute(
                "DELETE FROM objects WHERE plural = ? AND namespace = ? AND name = ?", (self._plural, namespace, name)
            )

    def publish(self, state: CopyState) -> None:
        with self._writing(state):
            pass

    @contextmanager
    def _writing(self, state: CopyState) -> Iterator[None]:
        """One transaction: the changes made in the block and the copy's state after them."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute(
                    "INSERT OR REPLACE INTO copies VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        self._plural,
                        self._api_version,
                        int(state.synced),
                        state.alive,
                        self._generation_base + state.generation,
                        state.seen_version,
                    ),
                )
                self._db.execute("COMMIT")
            except BaseException:
                # Never left inside a transaction (every later write would fail); the caller's watch
                # lists again after a pause.
                with suppress(sqlite3.Error):
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                raise

    def contains(self, namespace: str, name: str) -> bool:
        with self._lock:
            return _row(self._db, self._plural, namespace, name) is not None

    def get(self, namespace: str, name: str) -> T | None:
        with self._lock:
            row = _row(self._db, self._plural, namespace, name)
        return None if row is None else decode(row[0])

    def items(self, namespace: str | None) -> list[T]:
        with self._lock:
            return _items(self._db, self._plural, namespace)


def writer(path: Path) -> Callable[[ApiResource], StoredCopy[Any]]:
    """The watcher's storage for each resource, on one connection for all its copies (their writes
    are short, and serialised by its lock)."""
    connection = _connect(path)
    lock = threading.Lock()
    return lambda resource: StoredCopy(connection, lock, resource)


class SharedCopy(Generic[T]):
    """A worker's view of one copy in the file, with what a WatchCache offers its readers.

    Templates this worker creates are known at once (`observe`), until the file shows the watcher
    has applied their version, as a WatchCache of its own would."""

    def __init__(
        self, connection: sqlite3.Connection, resource: ApiResource, keep: Callable[[Mapping[str, Any]], T]
    ) -> None:
        self._db = connection
        self._resource = resource
        self._keep = keep
        self._observed: dict[tuple[str, str], tuple[int, T]] = {}
        self._observed_generation = 0
        self._state_read: tuple[float, CopyState | None] = (float("-inf"), None)
        # (namespace, name) or (namespace, None) for items -> what the file held, at _memo_generation
        self._memo: dict[tuple[str | None, str | None], Any] = {}
        self._memo_generation = -1

    @property
    def resource(self) -> ApiResource:
        return self._resource

    def _remembered(self, key: tuple[str | None, str | None], read: Callable[[], Any]) -> Any:
        """What `read` returns from the file, remembered while the copy's generation stays the same."""
        state = self._state()
        generation = -1 if state is None else state.generation
        if generation != self._memo_generation or len(self._memo) >= MEMO_ENTRIES:
            self._memo.clear()
            self._memo_generation = generation
        if key not in self._memo:
            try:
                value = read()
            except (sqlite3.Error, pickle.UnpicklingError) as exc:
                # Not remembered, and the copy not trusted until its state reads again.
                log.warning("%s: cannot read the cluster copy: %s", self._resource.plural, exc)
                self._state_read = (time.monotonic(), None)
                return _FAILED
            if generation < 0:
                return value  # no state to tell when it changes: never remembered
            self._memo[key] = value
        return self._memo[key]

    def _state(self) -> CopyState | None:
        now = time.monotonic()
        if now - self._state_read[0] < STATE_SECONDS:
            return self._state_read[1]
        state = self._read_state()
        self._state_read = (now, state)
        return state

    def _read_state(self) -> CopyState | None:
        try:
            row = self._db.execute(
                "SELECT api_version, synced, alive, generation, seen_version FROM copies WHERE plural = ?",
                (self._resource.plural,),
            ).fetchone()
        except sqlite3.Error:
            return None  # file locked for longer than a review may wait, or gone: ask the API
        if row is None or row[0] != self._resource.api_version:
            return None
        return CopyState(bool(row[1]), float(row[2]), int(row[3]), int(row[4]))

    @property
    def synced(self) -> bool:
        state = self._state()
        return state is not None and state.synced and time.monotonic() - state.alive < WATCH_SILENCE_SECONDS

    @property
    def silence(self) -> float:
        state = self._state()
        return float("inf") if state is None or not state.synced else time.monotonic() - state.alive

    @property
    def generation(self) -> int:
        """Changes whenever the copy changes: the watcher's generation and this worker's observed
        writes only ever grow, so their sum does too."""
        state = self._state()
        return (0 if state is None else state.generation) + self._observed_generation

    def start(self) -> None:
        pass  # the watcher process watches

    def stop(self) -> None:
        pass

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.synced:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)  # gevent's sleep in `serve`: other reviews go on
        return True

    def get(self, namespace: str | None, name: str) -> T | None:
        stored = self._remembered((namespace or "", name), lambda: self._stored_value(namespace or "", name))
        if stored is _FAILED:
            return None
        if stored is not _ABSENT:
            return stored  # type: ignore[no-any-return]
        observed = self._current_observed().get((namespace or "", name))
        return None if observed is None else observed[1]

    def _stored_value(self, namespace: str, name: str) -> Any:
        row = _row(self._db, self._resource.plural, namespace, name)
        return _ABSENT if row is None else decode(row[0])

    def items(self, namespace: str | None = None) -> list[T]:
        stored = self._remembered((namespace, None), lambda: _items(self._db, self._resource.plural, namespace))
        found: list[T] = [] if stored is _FAILED else list(stored)
        return found + [
            value
            for (observed_namespace, name), (_, value) in self._current_observed().items()
            if namespace in (None, observed_namespace) and not self._stored(observed_namespace, name)
        ]

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Take in an object this worker just wrote, unless the watcher has applied its version (or a
        newer one: perhaps its deletion) already."""
        namespace, name, version = object_key(obj)
        state = self._state()
        if not version.isdigit() or int(version) <= (-1 if state is None else state.seen_version):
            return
        self._observed[(namespace, name)] = (int(version), self._keep(obj))
        self._observed_generation += 1

    def _stored(self, namespace: str, name: str) -> bool:
        try:
            return _row(self._db, self._resource.plural, namespace, name) is not None
        except sqlite3.Error:
            return False

    def _current_observed(self) -> dict[tuple[str, str], tuple[int, T]]:
        """The observed objects the watcher has not applied yet (the others are dropped)."""
        if self._observed:
            state = self._state()
            seen = -1 if state is None else state.seen_version
            for key, (version, _) in list(self._observed.items()):
                if version <= seen:
                    del self._observed[key]
        return self._observed


_ABSENT = object()  # no such object in the file (a kept form may itself be None)
_FAILED = object()  # the file could not be read


def reader(path: Path) -> sqlite3.Connection:
    """A worker's connection (opened after the fork: a connection never crosses one)."""
    return _connect(path)


def _row(db: sqlite3.Connection, plural: str, namespace: str, name: str) -> tuple[bytes] | None:
    return db.execute(  # type: ignore[no-any-return]
        "SELECT value FROM objects WHERE plural = ? AND namespace = ? AND name = ?", (plural, namespace, name)
    ).fetchone()


def _items(db: sqlite3.Connection, plural: str, namespace: str | None) -> list[Any]:
    if namespace is None:
        rows = db.execute("SELECT value FROM objects WHERE plural = ?", (plural,))
    else:
        rows = db.execute("SELECT value FROM objects WHERE plural = ? AND namespace = ?", (plural, namespace))
    return [decode(value) for (value,) in rows]


class SharedCopies:
    """A worker's CopySource (webhook/cluster.py): views of the copies in the file at `path`."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None

    def __call__(
        self, resource: ApiResource, keep: Callable[[Mapping[str, Any]], Any], label_selector: str
    ) -> SharedCopy[Any]:
        if self._connection is None:
            self._connection = reader(self._path)
        return SharedCopy(self._connection, resource, keep)
