"""Reinvocation through the real apiserver: a second mutating webhook, called after dra-migrate,
injects a GPU init container; kube-apiserver calls dra-migrate again (reinvocationPolicy: IfNeeded),
and the pod's claims hold what the device plugin needed for the whole pod: main 2 + injected init 4
-> 4 devices (the init container got a claim of its own, 6 in all, before)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pods import PAUSE_IMAGE, container, gpu, pod_of

from .cluster_fixtures import RESOURCE_API, Kube
from .webhook_process import LocalWebhook, generate_tls

Obj = dict[str, Any]
LABEL = "e2e.dra-migrate.io/inject-gpu-init"
INJECTOR = "zz-e2e-gpu-init-injector"  # named after dra-migrate's configuration: called after it
WARMUP = {"name": "warmup", "image": PAUSE_IMAGE, "resources": {"limits": {"nvidia.com/gpu": "4"}}}


class _Injector(BaseHTTPRequestHandler):
    """Adds the GPU init container to a pod that has no init containers yet."""

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        request = review["request"]
        response: Obj = {"uid": request["uid"], "allowed": True}
        if not (request["object"].get("spec") or {}).get("initContainers"):
            patch = [{"op": "add", "path": "/spec/initContainers", "value": [WARMUP]}]
            response |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        data = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())


@pytest.fixture
def injector(kube: Kube, tmp_path: Path, webhook: LocalWebhook) -> Iterator[None]:
    webhook.ensure_default()
    tls = generate_tls(tmp_path / "injector-tls")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Injector)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tls.cert), str(tls.key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, name="gpu-init-injector", daemon=True).start()
    kube.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": INJECTOR},
            "webhooks": [
                {
                    "name": "inject.e2e.dra-migrate.io",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{server.server_address[1]}/inject",
                        "caBundle": tls.ca_bundle,
                    },
                    "rules": [
                        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
                    ],
                    "objectSelector": {"matchLabels": {LABEL: "true"}},
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 5,
                    "reinvocationPolicy": "Never",
                }
            ],
        }
    )
    try:
        yield
    finally:
        kube.delete("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", INJECTOR)
        server.shutdown()
        server.server_close()


@pytest.mark.usefixtures("injector")
def test_an_init_container_injected_after_dra_migrate_shares_its_claims(kube: Kube, namespace: str) -> None:
    pod = pod_of([container("main", gpu(2))], name="reinvoked", labels={LABEL: "true"})
    created = kube.create(pod, namespace)
    spec = created["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["warmup"], spec
    counts: dict[str, int] = {}
    for claim in spec["resourceClaims"]:
        template = kube.get(RESOURCE_API, "ResourceClaimTemplate", claim["resourceClaimTemplateName"], namespace)
        assert template is not None, claim
        counts[claim["name"]] = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
    assert sum(counts.values()) == 4, counts
    init, main = spec["initContainers"][0], spec["containers"][0]
    assert "nvidia.com/gpu" not in (init["resources"].get("limits") or {})
    assert sum(counts[c["name"]] for c in init["resources"]["claims"]) == 4
    assert [counts[c["name"]] for c in main["resources"]["claims"]] == [2]
