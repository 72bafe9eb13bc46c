"""A stand-in for the few kube-apiserver endpoints the webhook calls, for tests and the benchmark.

`FakeKube` keeps ResourceClaimTemplates and DeviceClasses in memory and implements
ResourceApi directly (in-process tests); `FakeKubeServer` serves the same store over HTTP
so a real `dra-migrate serve` can use it through a generated kubeconfig:

    GET  /apis/resource.k8s.io/{version}/namespaces/{ns}/resourceclaimtemplates/{name}
    POST /apis/resource.k8s.io/{version}/namespaces/{ns}/resourceclaimtemplates
    GET  /apis/resource.k8s.io/{version}/deviceclasses

Created templates get the apiserver's request defaults (allocationMode ExactCount, count 1)
and server metadata, like the real thing. `serve` never uses this module.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dra_migrate.webhook.resource_api import AlreadyExistsError, ApiError

_TEMPLATE = re.compile(
    r"/apis/resource\.k8s\.io/(?P<v>[^/]+)/namespaces/(?P<ns>[^/]+)/resourceclaimtemplates(?:/(?P<name>[^/]+))?"
)
_CLASSES = re.compile(r"/apis/resource\.k8s\.io/(?P<v>[^/]+)/deviceclasses")


@dataclass
class FakeKube:
    templates: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    device_classes: list[dict[str, Any]] = field(default_factory=list)
    # (method, path) of every call, in order.
    calls: list[tuple[str, str]] = field(default_factory=list)
    # Test knobs: answer every call with this HTTP status, or only after this many seconds;
    # `lose_create_races`: store a POSTed template but answer 409, as if another replica
    # had created the same object between our GET and our POST.
    fail_status: int | None = None
    delay: float = 0.0
    lose_create_races: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def calls_to(self, method: str, fragment: str = "") -> int:
        with self.lock:
            return sum(1 for m, path in self.calls if m == method and fragment in path)

    def add_device_class(self, name: str, extended_resource_name: str | None = None) -> None:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{name}"'}}]}
        if extended_resource_name:
            spec["extendedResourceName"] = extended_resource_name
        device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}}
        with self.lock:
            self.device_classes.append({**device_class, "spec": spec})

    # --- the store, shared by both front ends; returns (HTTP status, body) ---

    def handle(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.calls.append((method, path))
            fail = self.fail_status
        if self.delay:
            time.sleep(self.delay)
        if fail is not None:
            return fail, _status(fail, "Failure", f"injected failure {fail}")
        route = urlsplit(path).path
        if method == "GET" and (found := _CLASSES.fullmatch(route)):
            with self.lock:
                items = copy.deepcopy(self.device_classes)
            return 200, {"apiVersion": f"resource.k8s.io/{found['v']}", "kind": "DeviceClassList", "items": items}
        found = _TEMPLATE.fullmatch(route)
        if found is None:
            return 404, _status(404, "NotFound", f"the server could not find the requested resource {route}")
        namespace, name = found["ns"], found["name"]
        if method == "GET" and name:
            with self.lock:
                template = copy.deepcopy(self.templates.get((namespace, name)))
            if template is None:
                return 404, _status(404, "NotFound", f'resourceclaimtemplates "{name}" not found')
            return 200, template
        if method == "POST" and not name and isinstance(body, dict):
            return self._create(namespace, body)
        return 405, _status(405, "MethodNotAllowed", f"{method} {route} is not supported here")

    def _create(self, namespace: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = str((body.get("metadata") or {}).get("name", ""))
        stored = _with_server_fields(body, namespace)
        exists = _status(409, "AlreadyExists", f'resourceclaimtemplates "{name}" already exists')
        with self.lock:
            if (namespace, name) in self.templates:
                return 409, exists
            self.templates[(namespace, name)] = stored
            if self.lose_create_races:
                return 409, exists
        return 201, copy.deepcopy(stored)

    # --- ResourceApi, for in-process use ---

    def get_template(self, api_version: str, namespace: str, name: str, timeout: float) -> dict[str, Any] | None:
        status, body = self.handle("GET", _template_path(api_version, namespace, name))
        if status == 404:
            return None
        return _ok("get_template", status, body)

    def create_template(self, template: dict[str, Any], timeout: float) -> dict[str, Any]:
        namespace = template["metadata"]["namespace"]
        status, body = self.handle("POST", _template_path(template["apiVersion"], namespace), template)
        if status == 409:
            raise AlreadyExistsError("create_template", body["message"])
        return _ok("create_template", status, body)

    def list_device_classes(self, api_version: str, timeout: float) -> list[dict[str, Any]]:
        status, body = self.handle("GET", f"/apis/{api_version}/deviceclasses")
        items: list[dict[str, Any]] = _ok("list_deviceclasses", status, body)["items"]
        return items


def _template_path(api_version: str, namespace: str, name: str = "") -> str:
    path = f"/apis/{api_version}/namespaces/{namespace}/resourceclaimtemplates"
    return f"{path}/{name}" if name else path


def _ok(operation: str, status: int, body: dict[str, Any]) -> dict[str, Any]:
    if status >= 300:
        raise ApiError(operation, f"http_{status}", f"HTTP {status}: {body.get('message')}")
    return body


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def _with_server_fields(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    stored = copy.deepcopy(body)
    metadata = stored.setdefault("metadata", {})
    metadata.update(
        namespace=namespace,
        uid=str(uuid.uuid4()),
        resourceVersion="1",
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

    def _answer(self, method: str) -> None:
        body = None
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            body = json.loads(self.rfile.read(length))
        status, payload = self.server.fake.handle(method, self.path, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeKube) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class FakeKubeServer:
    """`fake` over plain HTTP on a free loopback port, in a background thread."""

    def __init__(self, fake: FakeKube | None = None) -> None:
        self.fake = fake if fake is not None else FakeKube()
        self._server = _Server(self.fake)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-kube", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeKubeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def write_kubeconfig(self, path: Path) -> Path:
        return write_kubeconfig(path, self.url)


def write_kubeconfig(path: Path, server: str) -> Path:
    """A minimal kubeconfig (JSON is valid YAML) pointing at `server`, without credentials."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "fake", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config, indent=2))
    return path
