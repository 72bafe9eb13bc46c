"""`serve --client-ca` with a real kube-apiserver that authenticates itself to webhooks.

The apiserver presents a client certificate to a webhook when its admission configuration
says so: `--admission-control-config-file` holds a WebhookAdmissionConfiguration whose
kubeconfig has a user named after the webhook's host:port (`<service>.<namespace>.svc` for
an in-cluster Service) with the certificate and key. This module starts a control plane of
its own with that configuration (the shared one presents no certificate), and the webhook
with `--client-ca` set to the CA of that certificate:

* a GPU pod created through the apiserver is converted (the apiserver's certificate verifies);
* a client without a certificate gets 401 from /mutate, while probes stay open;
* a webhook that trusts another CA refuses the apiserver's handshake, so the pod create fails
  (failurePolicy: Fail) instead of reaching a webhook that cannot tell who called it.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from pods import gpu_pod

from .cluster_fixtures import Kube, create_namespace, delete_namespace
from .controlplane import ControlPlane, free_port, remove_workdir
from .pki import CertificateAuthority, CertKeyPair, create_ca, issue_cert
from .webhook_process import DEPLOY_SERVER_CONFIG, LocalWebhook


@dataclass
class AuthenticatingCluster:
    plane: ControlPlane
    kube: Kube
    webhook: LocalWebhook
    client_ca: CertificateAuthority
    other_ca: CertificateAuthority
    apiserver_client: CertKeyPair


def write_admission_configuration(directory: Path, webhook_host: str, client: CertKeyPair) -> Path:
    """The apiserver's AdmissionConfiguration: present `client` to the webhook at `webhook_host`."""
    kubeconfig = directory / "webhook-clients.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "users": [
                    {
                        "name": webhook_host,
                        "user": {"client-certificate": str(client.cert), "client-key": str(client.key)},
                    }
                ],
            }
        )
    )
    admission = directory / "admission.yaml"
    admission.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [
                    {
                        "name": "MutatingAdmissionWebhook",
                        "configuration": {
                            "apiVersion": "apiserver.config.k8s.io/v1",
                            "kind": "WebhookAdmissionConfiguration",
                            "kubeConfigFile": str(kubeconfig),
                        },
                    }
                ],
            }
        )
    )
    return admission


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> Iterator[AuthenticatingCluster]:
    workdir = Path(tempfile.mkdtemp(prefix="dra-migrate-e2e-clientcert-"))
    pki = workdir / "webhook-clients"
    (pki / "trusted").mkdir(parents=True)
    (pki / "other").mkdir(parents=True)
    client_ca = create_ca(pki / "trusted", "apiserver webhook clients")
    other_ca = create_ca(pki / "other", "someone else")
    client = issue_cert(client_ca, pki, "kube-apiserver-webhook-client", "kube-apiserver", client=True)
    port = free_port()
    admission = write_admission_configuration(pki, f"127.0.0.1:{port}", client)
    plane = ControlPlane(
        control_plane.binaries,
        workdir / "plane",
        control_plane.spec,
        extra_apiserver_args=[f"--admission-control-config-file={admission}"],
    )
    plane.workdir.mkdir(parents=True)
    webhook: LocalWebhook | None = None
    failed = True
    try:
        plane.start()
        kube = Kube(plane.new_api_client())
        webhook = LocalWebhook.create(plane, kube)
        webhook.server.port = port
        webhook.server.extra_args = ("--client-ca", str(client_ca.files.cert))
        webhook.start()
        yield AuthenticatingCluster(plane, kube, webhook, client_ca, other_ca, client)
        failed = False
    finally:
        try:
            if webhook is not None:
                webhook.close()
        finally:
            plane.stop()
            if not failed:  # keep the logs of a failed run
                remove_workdir(workdir)


@pytest.fixture
def namespace(cluster: AuthenticatingCluster) -> Iterator[str]:
    name = create_namespace(cluster.kube)
    try:
        yield name
    finally:
        delete_namespace(cluster.kube, name)


def test_pod_is_converted_through_an_authenticated_apiserver(cluster: AuthenticatingCluster, namespace: str) -> None:
    created = cluster.kube.create(gpu_pod("authenticated"), namespace)
    assert created["spec"].get("resourceClaims"), "the apiserver's review was not converted"
    assert "nvidia.com/gpu" not in (created["spec"]["containers"][0]["resources"].get("limits") or {})


def test_clients_without_the_certificate_are_refused(cluster: AuthenticatingCluster) -> None:
    server = cluster.webhook.server
    context = server.tls.client_context()
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}
    request = urllib.request.Request(
        server.url, data=json.dumps(review).encode(), headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert refused.value.code == 401
    assert "client certificate" in json.loads(refused.value.read())["message"]
    # kubelet probes carry no certificate and still get an answer.
    with urllib.request.urlopen(f"{server.base_url}/readyz", context=context, timeout=10) as ready:
        assert ready.status == 200


def test_a_webhook_trusting_another_ca_refuses_the_apiserver(cluster: AuthenticatingCluster, namespace: str) -> None:
    server = cluster.webhook.server
    trusted = server.extra_args
    server.stop()
    server.extra_args = ("--client-ca", str(cluster.other_ca.files.cert))
    server.start(DEPLOY_SERVER_CONFIG)
    try:
        with pytest.raises(ApiException) as refused:
            cluster.kube.create(gpu_pod("stranger"), namespace)
        message = str(json.loads(refused.value.body or "{}").get("message"))
        assert 'failed calling webhook "pods.dra-migrate.io"' in message, message
        assert cluster.kube.get("v1", "Pod", "stranger", namespace) is None
    finally:
        server.stop()
        server.extra_args = trusted
        server.start(DEPLOY_SERVER_CONFIG)
        cluster.webhook.wait_until_called()
