"""Shared helpers for the webhook tests: a real `serve` process, reviews, the corpus.

(A plain module with a unique name rather than more conftest.py: tests/ has no __init__.py
files, so helper modules of different parts must not share a name.)
"""

from __future__ import annotations

import base64
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import corpus
import jsonpatch
import requests
import yaml
from polling import wait_until, wait_while_running

from dra_migrate.engine import Config

ROOT = Path(__file__).resolve().parents[2]
CORPUS = corpus.CORPUS / "legacy"
START_TIMEOUT_S = 30.0
# The installed `dra-migrate` entry point, else the package's __main__.
_ENTRY_POINT = Path(sys.executable).with_name("dra-migrate")
SERVE_COMMAND = (str(_ENTRY_POINT),) if _ENTRY_POINT.exists() else (sys.executable, "-m", "dra_migrate")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _watched(fake: Any, fragment: str) -> bool:
    return bool(fake.calls_to("GET", fragment) > 0)


def watching(fake: Any, *plurals: str, timeout: float = 10.0) -> None:
    """Wait until a server's watches of `plurals` are open on `fake` (a FakeKube): its copies are current."""
    for plural in plurals:
        fragment = f"{plural}?watch=true"
        wait_until(functools.partial(_watched, fake, fragment), timeout, f"a watch of {plural}")
    time.sleep(0.05)  # the first list came before the watch; the watch's own request is what we saw


def https_session(ca_file: Path) -> requests.Session:
    """A session that verifies against our CA (trust_env off: REQUESTS_CA_BUNDLE would win)."""
    session = requests.Session()
    session.trust_env = False
    session.verify = str(ca_file)
    return session


class ServerProcess:
    """`dra-migrate serve ...` on 127.0.0.1 and a free port, stopped with SIGTERM."""

    def __init__(
        self,
        *,
        tls_dir: Path,
        work_dir: Path,
        config: Mapping[str, Any] | None = None,
        kubeconfig: Path | None = None,
        workers: int = 2,
        extra_args: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.log_path = work_dir / f"serve-{self.port}.log"
        self.session = https_session(tls_dir / "ca.crt")
        args = [
            *SERVE_COMMAND,
            "serve",
            "--cert",
            str(tls_dir / "tls.crt"),
            "--key",
            str(tls_dir / "tls.key"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(workers),
            *extra_args,
        ]
        if config is not None:
            config_path = work_dir / f"config-{self.port}.yaml"
            config_path.write_text(yaml.safe_dump(dict(config)))
            args += ["--config", str(config_path)]
        if kubeconfig is not None:
            args += ["--kubeconfig", str(kubeconfig)]
        environment = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
        environment.update(env or {})
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(args, cwd=ROOT, env=environment, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self) -> ServerProcess:
        def ready() -> bool:
            try:
                return self.session.get(f"{self.url}/readyz", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_while_running(
            ready,
            self.process.poll,
            what="GET /readyz to answer 200",
            log=self.log,
            timeout=START_TIMEOUT_S,
            interval=0.05,
        )
        return self

    def post(self, body: Any, path: str = "/mutate", **kwargs: Any) -> requests.Response:
        data = body if isinstance(body, bytes | str) else json.dumps(body)
        headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
        return self.session.post(f"{self.url}{path}", data=data, headers=headers, timeout=10, **kwargs)

    def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        """POST a well-formed review; it must come back 200 with the uid echoed."""
        answer = self.post(review)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["apiVersion"] == review["apiVersion"]
        assert body["kind"] == "AdmissionReview"
        response: dict[str, Any] = body["response"]
        assert response["uid"] == review["request"]["uid"]
        return response

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self.session.close()
        return self.process.returncode


WATCHER_NAME = "dra-watcher"  # the watcher process's /proc/<pid>/comm (webhook/watcher.py)


def _children(server: ServerProcess) -> list[int]:
    master = server.process.pid
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def _named(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def worker_pids(server: ServerProcess) -> list[int]:
    """The gunicorn workers of a running `serve` (its master's children but the watcher)."""
    return [pid for pid in _children(server) if _named(pid) != WATCHER_NAME]


def watcher_pids(server: ServerProcess) -> list[int]:
    """The watcher process of a running `serve` (one, or none while it is started again)."""
    return [pid for pid in _children(server) if _named(pid) == WATCHER_NAME]


def watch_stale(server: ServerProcess, resource: str) -> float | None:
    """The server's dra_migrate_webhook_watch_stale{resource} (None before it is reported)."""
    for line in server.session.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(f'dra_migrate_webhook_watch_stale{{resource="{resource}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return None


def decoded_patch(response: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    if "patch" not in response:
        return None
    assert response["patchType"] == "JSONPatch"
    patch: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return patch


def patched(obj: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with the response's patch applied (the patch must be there)."""
    patch = decoded_patch(response)
    assert patch is not None, f"no patch in {response}"
    result: dict[str, Any] = jsonpatch.apply_patch(dict(obj), patch)
    return result


def corpus_pods(config: Config) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, Pod) for every pod and every workload pod template in the legacy corpus."""
    for path in sorted(CORPUS.iterdir()):
        with path.open() as stream:
            # JSON round trip: what an apiserver would send (YAML dates become strings).
            documents = [
                json.loads(json.dumps(d, default=str)) for d in yaml.safe_load_all(stream) if isinstance(d, dict)
            ]
        for number, document in enumerate(documents):
            for index, (_, spec) in enumerate(config.workloads.pod_specs(document)):
                label = f"{path.name}#{number}.{index}"
                if document.get("kind") == "Pod" and document.get("apiVersion") == "v1":
                    yield label, document
                    continue
                metadata = {"name": f"pod-{number}-{index}", **_template_metadata(document, spec)}
                yield label, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _template_metadata(workload: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """Labels/annotations of the pod template that holds `spec`, when it can be found."""
    found: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("spec") is spec and isinstance(node.get("metadata"), dict):
                found.update({k: v for k, v in node["metadata"].items() if k in ("labels", "annotations")})
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(workload)
    return found


StartServer = Callable[..., ServerProcess]
