"""The Helm chart installed on the real control plane, converting a real pod.

`helm install` creates every object of deploy/helm/dra-migrate in the real apiserver. No kubelet
runs here, so the chart's Deployment gets no running pods and nothing routes its Service; two
stand-ins take their place, and nothing else of the chart is changed:

- **the webhook pod**: `dra-migrate serve` as a local process with the Deployment's own arguments,
  reading the files the pod would mount (config.yaml from the installed ConfigMap, tls.crt and
  tls.key from the Secret Helm generated) and calling the API with a token of the chart's
  ServiceAccount, so the chart's RBAC is all the server has;
- **kube-proxy**: the chart's Service is replaced by an ExternalName Service of the same name and
  port pointing at 127.0.0.1. kube-apiserver resolves a service webhook through the Service and
  verifies TLS for `<service>.<namespace>.svc` against the configuration's caBundle, so what it
  checks is the chart's own certificate and caBundle.

The chart is installed with `service.port` set to a free port, because the local process cannot
take 443.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from pods import gpu_pod, pause_pod
from polling import wait_for

from .cluster_fixtures import RESOURCE_API, FakeCluster, Kube, wait_for_pod_claims
from .controlplane import ControlPlane, free_port
from .webhook_process import REPO_ROOT, WebhookServer, WebhookTls

Obj = dict[str, Any]

CHART = REPO_ROOT / "deploy" / "helm" / "dra-migrate"
RELEASE = "helm-e2e"
RELEASE_NAMESPACE = "dra-migrate-helm"
FULLNAME = f"{RELEASE}-dra-migrate"  # the chart's naming for a release without "dra-migrate" in it
MWC_API = "admissionregistration.k8s.io/v1"
MOUNT_ROOT = "/etc/dra-migrate/"
CALLED_TIMEOUT_S = 30.0


def find_helm() -> str:
    """$HELM, then PATH, then tests/deploy/build-helm.sh's cache; skip (fail with CI=true) without one."""
    configured = os.environ.get("HELM") or shutil.which("helm")
    if configured:
        return configured
    cache = Path(os.environ.get("DRA_MIGRATE_CACHE") or Path.home() / ".cache" / "dra-migrate")
    built = sorted(cache.glob("helm-v*/helm"))
    if built:
        return str(built[-1])
    message = "helm not found: set $HELM, put helm on PATH, or build it with tests/deploy/build-helm.sh"
    if os.environ.get("CI", "").strip().lower() in ("true", "1"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


class ServiceNameTls(WebhookTls):
    """The chart's certificate names the Service, not 127.0.0.1: the harness's own readiness and
    metrics probes check the CA only. (kube-apiserver checks the name; that is the point.)"""

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_cert))
        context.check_hostname = False
        return context


@dataclass
class Release:
    plane: ControlPlane
    kube: Kube
    helm: str
    workdir: Path
    port: int

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [self.helm, "--kubeconfig", str(self.plane.kubeconfig), "--namespace", RELEASE_NAMESPACE, *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)

    def install(self) -> None:
        result = self.run(
            "upgrade", "--install", RELEASE, str(CHART), "--create-namespace", "--set", f"service.port={self.port}"
        )
        assert result.returncode == 0, f"helm install failed:\n{result.stdout}\n{result.stderr}"

    def get(self, api_version: str, kind: str, name: str, namespaced: bool = True) -> Obj:
        found = self.kube.get(api_version, kind, name, RELEASE_NAMESPACE if namespaced else None)
        assert found is not None, f"{kind} {name} was not installed"
        return found

    def uninstall(self) -> None:
        self.run("uninstall", RELEASE, "--wait", "--timeout", "60s")
        # Whatever happened above, no configuration with failurePolicy Fail may outlive the module.
        self.kube.delete(MWC_API, "MutatingWebhookConfiguration", FULLNAME)
        self.kube.delete("v1", "Namespace", RELEASE_NAMESPACE)


@pytest.fixture(scope="module")
def release(control_plane: ControlPlane, kube: Kube, fake_cluster: FakeCluster) -> Iterator[Release]:
    workdir = control_plane.workdir / "helm"
    workdir.mkdir(parents=True, exist_ok=True)
    installed = Release(control_plane, kube, find_helm(), workdir, free_port())
    try:
        installed.install()
        yield installed
    finally:
        installed.uninstall()


# --------------------------------------------------------------------------- the stand-ins


def mounted_files(release: Release, directory: Path) -> Path:
    """The files the Deployment's pod would see under /etc/dra-migrate, from the installed
    ConfigMap and Secret its projected volume names; returns the local directory."""
    deployment = release.get("apps/v1", "Deployment", FULLNAME)
    pod = deployment["spec"]["template"]["spec"]
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == MOUNT_ROOT.rstrip("/")]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    for source in volume["projected"]["sources"]:
        if "configMap" in source:
            data = release.get("v1", "ConfigMap", source["configMap"]["name"])["data"]
            contents = {item["path"]: data[item["key"]].encode() for item in source["configMap"]["items"]}
        else:
            data = release.get("v1", "Secret", source["secret"]["name"])["data"]
            contents = {item["path"]: base64.b64decode(data[item["key"]]) for item in source["secret"]["items"]}
        for relative, content in contents.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return directory


def service_account_kubeconfig(release: Release) -> Path:
    """The admin kubeconfig's cluster entry with a token of the chart's ServiceAccount."""
    token = release.plane.kubectl(
        "create", "token", FULLNAME, "--namespace", RELEASE_NAMESPACE, "--duration", "1h"
    ).stdout.strip()
    admin = yaml.safe_load(release.plane.kubeconfig.read_text(encoding="utf-8"))
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": "webhook", "user": {"token": token}}],
        "contexts": [{"name": "webhook", "context": {"cluster": admin["clusters"][0]["name"], "user": "webhook"}}],
        "current-context": "webhook",
    }
    path = release.workdir / "service-account.kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    path.chmod(0o600)
    return path


def route_service_to_loopback(release: Release) -> None:
    """kube-proxy's stand-in: the Service, same name and port, as ExternalName 127.0.0.1."""
    installed = release.get("v1", "Service", FULLNAME)
    [port] = installed["spec"]["ports"]
    release.kube.delete("v1", "Service", FULLNAME, RELEASE_NAMESPACE)
    wait_for(lambda: release.kube.get("v1", "Service", FULLNAME, RELEASE_NAMESPACE) is None, what="Service deleted")
    release.kube.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": FULLNAME, "namespace": RELEASE_NAMESPACE, "labels": installed["metadata"]["labels"]},
            "spec": {
                "type": "ExternalName",
                "externalName": "127.0.0.1",
                "ports": [{"name": port["name"], "port": port["port"], "protocol": "TCP"}],
            },
        }
    )


@pytest.fixture(scope="module")
def serving(release: Release) -> Iterator[WebhookServer]:
    """The chart's webhook, reachable the way the chart's MutatingWebhookConfiguration says."""
    deployment = release.get("apps/v1", "Deployment", FULLNAME)
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == [
        "serve",
        "--config",
        f"{MOUNT_ROOT}config.yaml",
        "--cert",
        f"{MOUNT_ROOT}tls/tls.crt",
        "--key",
        f"{MOUNT_ROOT}tls/tls.key",
        "--port",
        "8443",
    ], "the harness below runs exactly these flags"
    files = mounted_files(release, release.workdir / "etc-dra-migrate")
    ca_pem = base64.b64decode(release.get("v1", "Secret", f"{FULLNAME}-tls")["data"]["ca.crt"])
    (files / "tls" / "ca.crt").write_bytes(ca_pem)  # only for the harness's own probes
    server = WebhookServer(
        tls=ServiceNameTls(directory=files / "tls", ca_pem=ca_pem),
        kubeconfig=service_account_kubeconfig(release),
        log_path=release.plane.log_dir / "dra-migrate-helm-webhook.log",
        workdir=release.workdir,
        port=release.port,
    )
    route_service_to_loopback(release)
    server.start(files / "config.yaml")
    try:
        yield server
    finally:
        server.stop()


def wait_until_called(server: WebhookServer, kube: Kube, namespace: str) -> None:
    """Dry-run GPU pods until the apiserver has called the webhook through the chart's configuration."""

    def called() -> bool:
        before = server.review_count()
        try:
            kube.create(gpu_pod("helm-marker"), namespace, dry_run="All")
        except ApiException:
            return False  # e.g. the apiserver has not seen the new Service yet
        return server.review_count() > before

    wait_for(
        called, what=f"kube-apiserver to call the chart's webhook (log {server.log_path})", timeout=CALLED_TIMEOUT_S
    )


# --------------------------------------------------------------------------- scenarios


def test_helm_install_creates_the_charts_objects(release: Release) -> None:
    status = release.run("status", RELEASE, "--output", "json")
    assert status.returncode == 0, status.stderr
    assert '"status":"deployed"' in status.stdout.replace(" ", "")
    release.get("apps/v1", "Deployment", FULLNAME)
    release.get("v1", "ConfigMap", f"{FULLNAME}-config")
    release.get("policy/v1", "PodDisruptionBudget", FULLNAME)
    release.get("networking.k8s.io/v1", "NetworkPolicy", FULLNAME)
    release.get("rbac.authorization.k8s.io/v1", "ClusterRole", FULLNAME, namespaced=False)
    release.get("scheduling.k8s.io/v1", "PriorityClass", f"{FULLNAME}-webhook", namespaced=False)
    mwc = release.get(MWC_API, "MutatingWebhookConfiguration", FULLNAME, namespaced=False)
    [hook] = mwc["webhooks"]
    secret = release.get("v1", "Secret", f"{FULLNAME}-tls")
    assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    assert hook["clientConfig"]["service"]["port"] == release.port
    assert hook["matchConditions"], "the apiserver compiled and stored the CEL conditions"


def test_helm_upgrade_keeps_the_certificate(release: Release) -> None:
    before = release.get("v1", "Secret", f"{FULLNAME}-tls")["data"]
    release.install()  # upgrade --install of the same release
    after = release.get("v1", "Secret", f"{FULLNAME}-tls")["data"]
    assert after == before, "an upgrade must not replace the CA and certificate the pods serve"
    [hook] = release.get(MWC_API, "MutatingWebhookConfiguration", FULLNAME, namespaced=False)["webhooks"]
    assert hook["clientConfig"]["caBundle"] == after["ca.crt"]


def test_installed_chart_converts_a_gpu_pod(
    release: Release, serving: WebhookServer, kube: Kube, namespace: str, fake_cluster: FakeCluster
) -> None:
    wait_until_called(serving, kube, namespace)

    created = kube.create(gpu_pod("trainer"), namespace)
    [container] = created["spec"]["containers"]
    assert "nvidia.com/gpu" not in (container.get("resources") or {}).get("limits", {})
    [claim_ref] = container["resources"]["claims"]
    [pod_claim] = created["spec"]["resourceClaims"]
    assert pod_claim["name"] == claim_ref["name"]
    template_name = pod_claim["resourceClaimTemplateName"]

    # Created by the server with the chart's ServiceAccount: its RBAC suffices.
    template = kube.get(RESOURCE_API, "ResourceClaimTemplate", template_name, namespace)
    assert template is not None
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com" and request["exactly"]["count"] == 1

    # The real resourceclaim controller and scheduler take it from there.
    [claim] = wait_for_pod_claims(kube, namespace, "trainer", count=1)
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert fake_cluster.node_of_pool(result["driver"], result["pool"]) in fake_cluster.nvidia_dra_nodes


def test_pods_without_devices_never_reach_the_charts_webhook(
    release: Release, serving: WebhookServer, kube: Kube, namespace: str
) -> None:
    wait_until_called(serving, kube, namespace)
    before = serving.review_count()
    kube.create(pause_pod("web"), namespace)
    assert serving.review_count() == before, "matchConditions send only pods with mapped resources"
