"""The watcher process of `serve`: the one process of a pod that lists and watches the cluster.

gunicorn's master forks it as it forks the workers (webhook/server.py: WatchingArbiter), before
them, and again when it exits. It runs the copies of webhook/cluster.py with their objects in the
file of webhook/sharedcopy.py, which the workers read: one copy per pod, one list and one watch per
resource, whatever the number of workers. It reports the copies' staleness metrics, and exits when
the master is gone.

While it is not running, or not current, the workers find the copies not synced and ask the API,
as they do whenever a copy is not trusted.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from dra_migrate.configfile import Settings
from dra_migrate.webhook import metrics, sharedcopy
from dra_migrate.webhook.cluster import ClusterWatch
from dra_migrate.webhook.policy import WEBHOOK_SECTION

log = logging.getLogger(__name__)

PROCESS_NAME = b"dra-watcher"  # its /proc/<pid>/comm (ps, top): the workers keep the interpreter's
PARENT_CHECK_SECONDS = 1.0
# A watcher that exits at once (an error at start) is started again at most this often.
RESTART_PAUSE_SECONDS = 1.0
STOP_WAIT_SECONDS = 2.0


def watch_into(path: Path, settings: Settings, kube: Any, parent: int) -> None:
    """The watcher's life: watch the cluster into `path` until the process `parent` is gone."""
    from dra_migrate.webhook.kube_client import KubeResourceApi  # after the fork: its own connections

    policy = settings.get(WEBHOOK_SECTION)
    api = KubeResourceApi(kube)
    ClusterWatch(
        api,
        settings.config.target,
        detect_target=not settings.target_given,
        timeout=policy.api_timeout_seconds,
        on_api_error=metrics.api_error,
        on_event=metrics.watch_event,
        on_staleness=metrics.watch_staleness,
        storage_for=sharedcopy.writer(path),
    ).start()
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)


class WatcherProcess:
    """The master's handle on the watcher: started before the workers, started again when it exits,
    stopped after them."""

    def __init__(self, path: Path, body: Callable[[Path, int], None], after_fork: Callable[[], None]) -> None:
        self._path = path
        self._body = body
        self._after_fork = after_fork  # what a forked worker also runs first (the master's loops end)
        self._pid = 0
        self._started = float("-inf")

    @property
    def pid(self) -> int:
        return self._pid

    def keep_running(self, listeners: Iterable[Any], master_signals: Iterable[int]) -> None:
        if self._pid and self._running():
            return
        if self._pid:
            log.warning("watcher process %s exited: the workers ask the API until a new one is current", self._pid)
            metrics.worker_exited(self._pid)
            sharedcopy.distrust_all(self._path)
            self._pid = 0
        if time.monotonic() - self._started < RESTART_PAUSE_SECONDS:
            return
        self._started = time.monotonic()
        master = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:  # out of processes or memory for now: the master tries again later
            log.warning("cannot start the watcher process: %s", exc)
            return
        if pid:
            self._pid = pid
            return
        code = 0
        try:  # the child: never returns into the master's code
            for listener in listeners:  # the workers' sockets: connections must not queue in a copy
                listener.close()
            for number in master_signals:  # the master's: HUP, TTIN, TTOU, USR1, ... mean nothing here
                signal.signal(number, signal.SIG_IGN)
            for number in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD):
                signal.signal(number, signal.SIG_DFL)
            self._after_fork()
            gc.freeze()  # the master's objects: never scanned here, so their pages stay shared with it
            _name_process(PROCESS_NAME)
            log.info("watcher process %s: watching the cluster for the workers", os.getpid())
            self._body(self._path, master)
        except BaseException:
            log.exception("the watcher process failed")
            code = 1
        finally:
            os._exit(code)

    def _running(self) -> bool:
        try:
            pid, _ = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:
            return False  # gunicorn's master reaped it (it reaps every child)
        return pid == 0

    def stop(self) -> None:
        if not self._pid:
            return
        with suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        while self._running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._running():
            with suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        metrics.worker_exited(self._pid)
        self._pid = 0


def _name_process(name: bytes) -> None:
    """Set the process's name (/proc/<pid>/comm), where Linux lets it be set."""
    path = ctypes.util.find_library("c")
    if path is None:
        return
    with suppress(OSError, AttributeError):
        ctypes.CDLL(path).prctl(_PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)


_PR_SET_NAME = 15  # linux/prctl.h
