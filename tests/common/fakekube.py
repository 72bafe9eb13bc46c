"""A stand-in for the kube-apiserver endpoints the webhook calls, for tests and the benchmark.

`FakeKube` keeps objects in memory and implements ResourceApi directly (in-process tests);
`FakeKubeServer` serves the same store over HTTP so a real `dra-migrate serve` can use it
through a generated kubeconfig. Paths follow the real API:

    GET  /version
    GET  /api/v1/namespaces[/{name}]                      (list, watch, get)
    GET  /api/v1[/namespaces/{ns}]/resourcequotas          (list, watch)
    GET  /apis/resource.k8s.io/{v}[/namespaces/{ns}]/resourceclaimtemplates[/{name}]
    POST /apis/resource.k8s.io/{v}/namespaces/{ns}/resourceclaimtemplates   (?dryRun=All: nothing stored)
    PATCH, DELETE /apis/resource.k8s.io/{v}/namespaces/{ns}/resourceclaimtemplates/{name}
                                     (merge patch of labels and annotations; delete preconditions)
    GET  /api/v1[/namespaces/{ns}]/pods                    (list)
    GET  /apis/resource.k8s.io/{v}/deviceclasses           (list, watch)

Lists honour `labelSelector` (equality only) and `limit`/`continue`; `?watch=true` streams
events after `resourceVersion` as chunked JSON lines until `timeoutSeconds`, like the real
server. Every change gets the next resourceVersion. Created templates get the apiserver's
request defaults (allocationMode ExactCount, count 1) and server metadata. Namespaces that
were never added exist implicitly for GET (so tests need not create them); only added ones
are listed and watched. `serve` never uses this module.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from dra_migrate.webhook.resource_api import (
    NAMESPACES,
    RESOURCE_QUOTAS,
    ApiResource,
    Page,
    WatchEvent,
    claim_templates,
    device_classes,
    status_error,
)

if TYPE_CHECKING:
    from dra_migrate.webhook.cluster import ClusterCaches

_PATH = re.compile(
    r"/api(?:s/(?P<group>[^/]+))?/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?"
)
TEMPLATES = "resourceclaimtemplates"
Key = tuple[str, str, str]  # (plural, namespace or "", name)


@dataclass
class FakeKube:
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    # (method, path) of every call, in order.
    calls: list[tuple[str, str]] = field(default_factory=list)
    # (path, Accept header) of every call over HTTP, in order.
    accepts: list[tuple[str, str]] = field(default_factory=list)
    # Test knobs: answer every call with this HTTP status (and Status message), or only after this
    # many seconds; `lose_create_races`: store a POSTed template but answer 409, as if another
    # replica had created the same object between our GET and our POST; `implicit_namespaces`:
    # GET of a namespace nobody added answers with a bare namespace instead of 404.
    fail_status: int | None = None
    fail_message: str = ""
    fail_kind: str = ""
    fail_retry_after: int | None = None  # details.retryAfterSeconds of the injected Status (429, 503)
    # Every watch ends at once with an ERROR event 410 (the resource version is "too old"), as a
    # misbehaving proxy or a compacting etcd can make it.
    watch_gone: bool = False
    # The same, for creates only (a quota or RBAC refusing a template, a namespace deleted meanwhile).
    create_status: int | None = None
    create_message: str = ""
    create_kind: str = ""
    delay: float = 0.0
    lose_create_races: bool = False
    implicit_namespaces: bool = True
    version: str = "v1.34.4"
    resource_version: int = 1
    events: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)  # (rv, plural, type, obj)
    lock: threading.Condition = field(default_factory=threading.Condition)
    closed: bool = False

    # --- test helpers ---

    def calls_to(self, method: str, fragment: str = "") -> int:
        with self.lock:
            return sum(1 for m, path in self.calls if m == method and fragment in path)

    @property
    def templates(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(namespace, name) -> ResourceClaimTemplate, a snapshot."""
        with self.lock:
            return {(ns, name): obj for (plural, ns, name), obj in self.objects.items() if plural == TEMPLATES}

    def put(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create, or update in place (same uid); delete first to replace with a new object."""
        metadata = obj.setdefault("metadata", {})
        key = (plural, str(metadata.get("namespace") or ""), str(metadata["name"]))
        with self.lock:
            existing = self.objects.get(key)
            metadata.setdefault("uid", existing["metadata"]["uid"] if existing else str(uuid.uuid4()))
            stored = self._record(key, obj, "MODIFIED" if existing else "ADDED")
        return stored

    def delete(self, plural: str, namespace: str, name: str) -> None:
        with self.lock:
            obj = self.objects.pop((plural, namespace, name), None)
            if obj is not None:
                self._record((plural, namespace, name), obj, "DELETED", store=False)

    def add_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        self.put(
            "namespaces",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}},
            },
        )

    def add_quota(
        self, namespace: str, name: str, hard: Mapping[str, str], used: Mapping[str, str] | None = None, **spec: Any
    ) -> None:
        """A ResourceQuota; with `used`, its status as the quota controller keeps it."""
        body = {"hard": dict(hard), **spec}
        quota: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace},
            "spec": body,
        }
        if used is not None:
            quota["status"] = {"hard": dict(hard), "used": dict(used)}
        self.put("resourcequotas", quota)

    def add_device_class(self, name: str, extended_resource_name: str | None = None) -> None:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{name}"'}}]}
        if extended_resource_name:
            spec["extendedResourceName"] = extended_resource_name
        self.put(
            "deviceclasses",
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec},
        )

    def fill(self, plural: str, objects: list[dict[str, Any]]) -> None:
        """Store many objects at once, without watch events (each taken as it is, not copied): a
        cluster as it is before anything watches it, for benchmarks."""
        with self.lock:
            for obj in objects:
                metadata = obj["metadata"]
                self.resource_version += 1
                metadata["resourceVersion"] = str(self.resource_version)
                self.objects[(plural, str(metadata.get("namespace") or ""), str(metadata["name"]))] = obj

    def add_template(self, template: Mapping[str, Any], namespace: str) -> dict[str, Any]:
        return self.put(TEMPLATES, _with_server_fields(dict(template), namespace))

    def close(self) -> None:
        """End every open watch."""
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def _record(self, key: Key, obj: dict[str, Any], kind: str, *, store: bool = True) -> dict[str, Any]:
        self.resource_version += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.resource_version)
        if store:
            self.objects[key] = obj
        self.events.append((self.resource_version, key[0], kind, obj))
        self.lock.notify_all()
        return copy.deepcopy(obj)

    # --- the store, shared by both front ends; returns (HTTP status, body) ---

    def handle(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        """A non-watch request."""
        with self.lock:
            self.calls.append((method, path))
            fail = self.fail_status
        if self.delay:
            time.sleep(self.delay)
        if fail is not None:
            status = _status(fail, "Failure", self.fail_message or f"injected failure {fail}", self.fail_kind)
            if self.fail_retry_after is not None:
                status.setdefault("details", {})["retryAfterSeconds"] = self.fail_retry_after
            return fail, status
        if method == "POST" and self.create_status is not None:
            message = self.create_message or f"injected failure {self.create_status}"
            return self.create_status, _status(self.create_status, "Failure", message, self.create_kind)
        url = urlsplit(path)
        if method == "GET" and url.path == "/version":
            major, minor = self.version.lstrip("v").split(".")[:2]
            return 200, {"major": major, "minor": minor, "gitVersion": self.version}
        found = _PATH.fullmatch(url.path)
        if found is None:
            return 404, _status(404, "NotFound", f"the server could not find the requested resource {url.path}")
        plural, namespace, name = found["plural"], found["ns"], found["name"]
        if method == "GET" and name:
            return self._get(plural, namespace or "", name)
        if method == "GET":
            return self._list(found, namespace, parse_qs(url.query))
        if method == "PATCH" and name and namespace and isinstance(body, dict):
            return self._patch(plural, namespace, name, body)
        if method == "DELETE" and name and namespace:
            return self._delete(plural, namespace, name, body if isinstance(body, dict) else {})
        if method == "POST" and not name and namespace and isinstance(body, dict):
            return self._create(plural, namespace, body, dry_run=parse_qs(url.query).get("dryRun") == ["All"])
        return 405, _status(405, "MethodNotAllowed", f"{method} {url.path} is not supported here")

    def _get(self, plural: str, namespace: str, name: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            obj = copy.deepcopy(self.objects.get((plural, namespace, name)))
        if obj is None and plural == "namespaces" and self.implicit_namespaces:
            labels = {"kubernetes.io/metadata.name": name}
            obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        if obj is None:
            return 404, _status(404, "NotFound", f'{plural} "{name}" not found', plural)
        return 200, obj

    def _list(
        self, found: re.Match[str], namespace: str | None, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, Any]]:
        plural = found["plural"]
        selector = _selector(query)
        with self.lock:
            selected = [
                (key, obj)
                for key, obj in self.objects.items()
                if key[0] == plural and (namespace is None or key[1] == namespace) and _labels_match(obj, selector)
            ]
            items = [obj for _, obj in sorted(selected, key=lambda item: item[0])]
            version = str(self.resource_version)
            start = int((query.get("continue") or ["0"])[0] or 0)
            limit = int((query.get("limit") or ["0"])[0] or 0) or len(items) or 1
            page = copy.deepcopy(items[start : start + limit])
        metadata = {"resourceVersion": version}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)
        group = found["group"]
        api_version = f"{group}/{found['version']}" if group else found["version"]
        return 200, {"apiVersion": api_version, "kind": "List", "metadata": metadata, "items": page}

    def _create(
        self, plural: str, namespace: str, body: dict[str, Any], *, dry_run: bool = False
    ) -> tuple[int, dict[str, Any]]:
        name = str((body.get("metadata") or {}).get("name", ""))
        exists = _status(409, "AlreadyExists", f'{plural} "{name}" already exists', plural)
        with self.lock:
            if (plural, namespace, name) in self.objects:
                return 409, exists
            if dry_run:  # checked as a create is, nothing stored (the real server's dryRun=All)
                return 201, _with_server_fields(body, namespace)
            stored = self._record((plural, namespace, name), _with_server_fields(body, namespace), "ADDED")
            if self.lose_create_races:
                return 409, exists
        return 201, stored

    def _patch(self, plural: str, namespace: str, name: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A JSON merge patch of labels and annotations, conditional on a metadata.resourceVersion in it."""
        with self.lock:
            stored = self.objects.get((plural, namespace, name))
            if stored is None:
                return 404, _status(404, "NotFound", f'{plural} "{name}" not found', plural)
            changes = body.get("metadata") or {}
            version = changes.get("resourceVersion")
            if version is not None and version != stored["metadata"]["resourceVersion"]:
                return 409, _status(409, "Conflict", f'Operation cannot be fulfilled on {plural} "{name}"', plural)
            patched = copy.deepcopy(stored)
            for field in ("labels", "annotations"):
                if field in changes:
                    values = {**(patched["metadata"].get(field) or {}), **(changes[field] or {})}
                    patched["metadata"][field] = {k: v for k, v in values.items() if v is not None}
            return 200, self._record((plural, namespace, name), patched, "MODIFIED")

    def _delete(self, plural: str, namespace: str, name: str, options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            stored = self.objects.get((plural, namespace, name))
            if stored is None:
                return 404, _status(404, "NotFound", f'{plural} "{name}" not found', plural)
            preconditions = options.get("preconditions") or {}
            for field in ("uid", "resourceVersion"):
                if field in preconditions and preconditions[field] != stored["metadata"].get(field):
                    return 409, _status(409, "Conflict", f"Precondition failed: {field}", plural)
            del self.objects[(plural, namespace, name)]
            self._record((plural, namespace, name), stored, "DELETED", store=False)
        return 200, _status(200, "Success", "deleted")

    def events_after(
        self, plural: str, resource_version: int, selector: dict[str, str], timeout: float
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Watch events of `plural` after `resource_version`, as they happen, for `timeout` seconds."""
        deadline = time.monotonic() + timeout
        seen = resource_version
        while True:
            with self.lock:
                fresh = [(rv, t, obj) for rv, p, t, obj in self.events if rv > seen and p == plural]
                if not fresh:
                    left = deadline - time.monotonic()
                    if left <= 0 or self.closed:
                        return
                    self.lock.wait(min(left, 0.5))
                    continue
            for rv, kind, obj in fresh:
                seen = rv
                if _labels_match(obj, selector):
                    yield kind, copy.deepcopy(obj)

    # --- ResourceApi, for in-process use ---

    def get(self, resource: ApiResource, namespace: str | None, name: str, timeout: float) -> dict[str, Any] | None:
        status, body = self.handle("GET", resource.path(namespace, name))
        if status == 404 and body.get("details", {}).get("kind") in (None, resource.plural):
            return None
        return _ok(f"get_{resource.plural}", status, body)

    def create(
        self, resource: ApiResource, namespace: str, body: dict[str, Any], timeout: float, *, dry_run: bool = False
    ) -> dict[str, Any]:
        status, answer = self.handle("POST", resource.path(namespace) + ("?dryRun=All" if dry_run else ""), body)
        return _ok(f"create_{resource.plural}", status, answer)

    def patch(
        self, resource: ApiResource, namespace: str, name: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        return _ok(f"patch_{resource.plural}", *self.handle("PATCH", resource.path(namespace, name), body))

    def delete_exactly(
        self, resource: ApiResource, namespace: str, name: str, timeout: float, *, uid: str, resource_version: str
    ) -> None:
        options = {"preconditions": {"uid": uid, "resourceVersion": resource_version}}
        _ok(f"delete_{resource.plural}", *self.handle("DELETE", resource.path(namespace, name), options))

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
        query = f"?limit={limit}&labelSelector={label_selector}&continue={continue_token}"
        status, body = self.handle("GET", resource.path(namespace) + query)
        page = _ok(f"list_{resource.plural}", status, body)
        return Page(page["items"], page["metadata"]["resourceVersion"], page["metadata"].get("continue", ""))

    def watch(
        self, resource: ApiResource, resource_version: str, timeout_seconds: int, *, label_selector: str = ""
    ) -> Iterator[WatchEvent]:
        status, body = self.handle("GET", f"{resource.path()}?watch=true&labelSelector={label_selector}")
        _ok(f"watch_{resource.plural}", status, body)
        selector = _selector({"labelSelector": [label_selector]})
        yield from self.events_after(resource.plural, int(resource_version or 0), selector, timeout_seconds)

    def server_version(self, timeout: float) -> dict[str, Any]:
        return _ok("get_version", *self.handle("GET", "/version"))


def synced_watch(api: FakeKube, timeout: float = 5.0) -> ClusterCaches:
    """The webhook's watched copies of `api` (release 1.34), started and current: what a running
    server reads instead of asking the API. Stop them with `.stop()`."""
    from dra_migrate.engine import Target  # here: most users of the fake need neither
    from dra_migrate.webhook.cluster import ClusterWatch

    caches = ClusterWatch(api, Target.parse("1.34"), detect_target=False, timeout=1.0).start()
    for cache in (caches.templates, caches.namespaces, caches.quotas, caches.device_classes):
        assert cache is not None and cache.wait_synced(timeout), "the watched copies of the fake API did not sync"
    return caches


def shared_watch(api: FakeKube, directory: Path, timeout: float = 5.0) -> tuple[ClusterCaches, Callable[[], None]]:
    """What a worker of `serve` reads: the copies a watcher (here a thread) keeps of `api` in a file
    in `directory`, current, as the worker's views of that file; and the watcher's stop."""
    from dra_migrate.engine import Target
    from dra_migrate.webhook import sharedcopy
    from dra_migrate.webhook.cluster import ClusterWatch

    path = sharedcopy.create(directory)
    target = Target.parse("1.34")
    watched = ClusterWatch(
        api,
        target,
        detect_target=False,
        timeout=1.0,
        storage_for=sharedcopy.writer(path),
    ).start()
    views = ClusterWatch(api, target, detect_target=False, timeout=1.0, copies=sharedcopy.SharedCopies(path)).start()
    for cache in (views.templates, views.namespaces, views.quotas, views.device_classes):
        assert cache is not None and cache.wait_synced(timeout), "the shared copies of the fake API did not sync"
    return views, watched.stop


def _selector(query: Mapping[str, list[str]]) -> dict[str, str]:
    text = (query.get("labelSelector") or [""])[0]
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)


def _labels_match(obj: Mapping[str, Any], selector: Mapping[str, str]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _ok(operation: str, status: int, body: dict[str, Any]) -> dict[str, Any]:
    if status >= 300:
        raise status_error(operation, status, body)
    return body


def _status(code: int, reason: str, message: str, kind: str = "") -> dict[str, Any]:
    status = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if kind:
        status["details"] = {"kind": kind}
    return status


def _with_server_fields(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    stored = copy.deepcopy(body)
    metadata = stored.setdefault("metadata", {})
    metadata.update(
        namespace=namespace,
        uid=str(uuid.uuid4()),
        creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    claim_spec = (stored.get("spec") or {}).get("spec") or {}
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            exactly.setdefault("allocationMode", "ExactCount")
            if exactly["allocationMode"] == "ExactCount":
                exactly.setdefault("count", 1)
    return stored


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, method: str) -> None:
        with self.server.fake.lock:
            self.server.fake.accepts.append((self.path, str(self.headers.get("Accept") or "")))
        body = None
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            body = json.loads(self.rfile.read(length))
        query = parse_qs(urlsplit(self.path).query)
        if method == "GET" and query.get("watch") == ["true"]:
            self._watch(query)
            return
        self._send_json(*self.server.fake.handle(method, self.path, body))

    def _watch(self, query: dict[str, list[str]]) -> None:
        fake = self.server.fake
        status, body = fake.handle("GET", self.path)
        found = _PATH.fullmatch(urlsplit(self.path).path)
        if status != 200 or found is None:
            self._send_json(status if status != 200 else 404, body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        since = int((query.get("resourceVersion") or ["0"])[0] or 0)
        timeout = float((query.get("timeoutSeconds") or ["30"])[0])
        gone = [("ERROR", _status(410, "Expired", "too old resource version"))] if fake.watch_gone else None
        try:
            for kind, obj in gone or fake.events_after(found["plural"], since, _selector(query), timeout):
                line = json.dumps({"type": kind, "object": obj}).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away
        self.close_connection = True

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_PATCH(self) -> None:
        self._answer("PATCH")

    def do_DELETE(self) -> None:
        self._answer("DELETE")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeKube) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class FakeKubeServer:
    """`fake` on a free loopback port, in a background thread: plain HTTP, or HTTPS with `tls`
    (a certificate and key file) as a real apiserver serves it."""

    def __init__(self, fake: FakeKube | None = None, tls: tuple[Path, Path] | None = None) -> None:
        self.fake = fake if fake is not None else FakeKube()
        self._server = _Server(self.fake)
        self._scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            # the handshake happens in the request's thread, not in the accept loop
            self._server.socket = context.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
            self._scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-kube", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def __enter__(self) -> FakeKubeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.fake.close()
        self._server.shutdown()
        self._server.server_close()

    def write_kubeconfig(self, path: Path) -> Path:
        return write_kubeconfig(path, self.url)


def write_kubeconfig(path: Path, server: str, ca: bytes | None = None) -> Path:
    """A minimal kubeconfig (JSON is valid YAML) pointing at `server`, without credentials; with
    `ca`, the server's CA embedded as `certificate-authority-data`."""
    cluster: dict[str, str] = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": cluster}],
        "users": [{"name": "fake", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config, indent=2))
    return path


__all__ = [
    "NAMESPACES",
    "RESOURCE_QUOTAS",
    "TEMPLATES",
    "FakeKube",
    "FakeKubeServer",
    "claim_templates",
    "device_classes",
    "write_kubeconfig",
]
