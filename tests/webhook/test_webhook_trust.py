"""Trust and correctness of a real server against a fake API that lists and watches like the real one.

* direct POSTs to /mutate create templates only in namespaces the configuration selects, and
  no test mapping (example.com) is built in;
* templates per namespace are bounded;
* a deleted or replaced template is never referenced, by any replica (the pods get the next name),
  and a taken name costs no API call per review;
* 403 and 404 answers are decided as what they are, not as an outage;
* a pod whose conversion would escape a ResourceQuota follows `webhook.quotaGap`;
* `serve --client-ca` admits only reviews from a client with a certificate of that CA.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from admission import make_review
from cert_chain import client_certificate
from cryptography.hazmat.primitives import serialization
from fakekube import FakeKubeServer
from pods import gpu_pod
from polling import wait_until
from webhook_support import (
    ROOT,
    SERVE_COMMAND,
    ServerProcess,
    StartServer,
    decoded_patch,
    patched,
    watching,
)

from dra_migrate.certs.generate import CertifiedKey, create_ca
from dra_migrate.engine import at_admission, convert, default_config
from dra_migrate.webhook.namespaces import own_namespace
from dra_migrate.webhook.optout import SKIP_KEY

TEMPLATE_READS = "/resourceclaimtemplates/"
TEMPLATES = "/resourceclaimtemplates"
DEVICES_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
ALL_WATCHES = ("resourceclaimtemplates", "namespaces", "resourcequotas", "deviceclasses")


def _posts(fake: FakeKubeServer) -> int:
    return fake.fake.calls_to("POST", TEMPLATES)


# --- finding 3: templates only where the configuration selects, no test mappings ---


@pytest.mark.parametrize("namespace", ["kube-system", "dra-migrate"])
def test_direct_post_for_an_excluded_namespace_creates_nothing(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, namespace: str
) -> None:
    deployed = yaml.safe_load((ROOT / "deploy" / "base" / "config.yaml").read_text())
    server = start_server(kubeconfig=kubeconfig, workers=1, config=deployed)
    response = server.review(make_review(gpu_pod(), namespace=namespace))
    assert response["allowed"] is True and "patch" not in response
    assert response["auditAnnotations"] == {
        "decision": "not-selected",
        "reason": f"namespace {namespace} is excluded (webhook.excludedNamespaces)",
    }
    assert _posts(fake_kube) == 0 and fake_kube.fake.templates == {}


def test_the_server_excludes_its_own_namespace(tmp_path: Path) -> None:
    sa_namespace = tmp_path / "namespace"
    sa_namespace.write_text("gpu-system\n")
    assert own_namespace(sa_namespace) == "gpu-system"
    assert own_namespace(tmp_path / "missing") is None


def test_excluded_namespaces_come_from_the_configuration(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"excludedNamespaces": ["ops"]}})
    assert "patch" not in server.review(make_review(gpu_pod(), namespace="ops"))
    assert decoded_patch(server.review(make_review(gpu_pod(), namespace="kube-system")))
    assert [ns for ns, _ in fake_kube.fake.templates] == ["kube-system"]


@pytest.mark.parametrize("watched", [True, False], ids=["from-the-watch", "read-directly"])
def test_direct_post_for_an_opted_out_namespace_creates_nothing(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, watched: bool
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1)
    if watched:
        watching(fake_kube.fake, "namespaces")
    fake_kube.fake.add_namespace("quiet", {SKIP_KEY: "true"})
    fake_kube.fake.add_namespace("busy")

    def opted_out() -> bool:
        answer = server.review(make_review(gpu_pod(), namespace="quiet"))
        return bool(answer["auditAnnotations"].get("reason") == f"namespace label {SKIP_KEY}=true")

    wait_until(opted_out, what="the namespace label to be seen")
    assert _posts(fake_kube) == 0
    assert decoded_patch(server.review(make_review(gpu_pod(), namespace="busy")))
    assert [ns for ns, _ in fake_kube.fake.templates] == ["busy"]


@pytest.mark.parametrize("resource", ["example.com/gpu", "gpu.example.com/fast", "nvidia.com/mig-9g.999gb"])
def test_no_test_mapping_is_built_in(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, resource: str
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=1)
    response = server.review(make_review(gpu_pod(resource=resource, count=1)))
    assert "patch" not in response and any("no DRA mapping" in w for w in response["warnings"])
    assert _posts(fake_kube) == 0


def _mig_pod(profile: str) -> dict[str, Any]:
    return gpu_pod(name=f"mig-{profile.replace('.', '-')}", resource=f"nvidia.com/mig-{profile}", count=1)


def test_templates_per_namespace_are_bounded(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """Pods that fail validation later still made templates: a namespace gets at most the limit."""
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"maxTemplatesPerNamespace": 3}})
    watching(fake_kube.fake, "resourceclaimtemplates")
    profiles = ["1g.5gb", "1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"]
    answers = [server.review(make_review(_mig_pod(profile), namespace="tenant")) for profile in profiles]
    assert [a["allowed"] for a in answers] == [True, True, True, False, False]
    refused = answers[3]["status"]
    assert refused["code"] == 403 and "namespace tenant already has 3 ResourceClaimTemplates" in refused["message"]
    assert "webhook.maxTemplatesPerNamespace" in refused["message"]
    assert len(fake_kube.fake.templates) == 3
    # Pods that reuse an existing template are not affected, nor are other namespaces.
    assert server.review(make_review(_mig_pod("1g.5gb"), namespace="tenant"))["allowed"] is True
    assert server.review(make_review(_mig_pod("7g.80gb"), namespace="other"))["allowed"] is True


# --- finding 4: a deleted or replaced template is never referenced ---


def _replace_with_all(fake: FakeKubeServer, namespace: str, name: str) -> None:
    """Delete the template and create one with the same name that allocates every device."""
    replaced = convert(gpu_pod(), default_config()).templates[0]
    replaced["spec"]["spec"]["devices"]["requests"][0]["exactly"] = {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "All",
    }
    fake.fake.delete("resourceclaimtemplates", namespace, name)
    fake.fake.add_template(replaced, namespace)


def _template_used(server: ServerProcess, pod_name: str) -> str:
    response = server.review(make_review(gpu_pod(name=pod_name), namespace="team-a"))
    assert response["allowed"] is True, response
    [claim] = patched(gpu_pod(name=pod_name), response)["spec"]["resourceClaims"]
    return str(claim["resourceClaimTemplateName"])


def test_replaced_template_is_used_by_no_replica(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """A template replaced with another spec is never used again: every replica gives the pods the next name."""
    warm = start_server(kubeconfig=kubeconfig, workers=2)
    name = convert(gpu_pod(), default_config()).templates[0]["metadata"]["name"]
    for index in range(10):  # both workers of the warm replica have used the template
        assert _template_used(warm, f"p{index}") == name
    _replace_with_all(fake_kube, "team-a", name)
    fresh = start_server(kubeconfig=kubeconfig, workers=2)
    wait_until(lambda: _template_used(warm, "probe") != name, timeout=5, what="the warm replica to see the replacement")
    for server in (warm, fresh):
        assert {_template_used(server, f"q{i}") for i in range(20)} == {f"{name}-2"}
    assert fake_kube.fake.templates[("team-a", name)]["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "All",
    }


def test_deleted_template_is_created_again(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    server = start_server(kubeconfig=kubeconfig, workers=2)
    name = convert(gpu_pod(), default_config()).templates[0]["metadata"]["name"]
    assert decoded_patch(server.review(make_review(gpu_pod(), namespace="team-a")))
    fake_kube.fake.delete("resourceclaimtemplates", "team-a", name)

    def recreated() -> bool:
        server.review(make_review(gpu_pod(), namespace="team-a"))
        return ("team-a", name) in fake_kube.fake.templates

    wait_until(recreated, timeout=5, what="a review to create the deleted template again")


# --- finding 11: a conflict costs no API call per review ---


def _per_review_calls(fake: FakeKubeServer, since: int) -> list[tuple[str, str]]:
    """API calls made since `since`, leaving out the workers' own start-up and watch requests
    (the cluster's version, lists, watches)."""
    return [
        c for c in fake.fake.calls[since:] if "watch=true" not in c[1] and "limit=" not in c[1] and c[1] != "/version"
    ]


def test_a_burst_against_a_taken_name_makes_no_api_calls(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    conflicting = convert(gpu_pod(), default_config()).templates[0]
    name = conflicting["metadata"]["name"]
    conflicting["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 7
    fake_kube.fake.add_template(conflicting, "team-a")
    fake_kube.fake.add_namespace("team-a")
    server = start_server(kubeconfig=kubeconfig, workers=2)

    def next_name_without_a_call() -> bool:
        before = len(fake_kube.fake.calls)
        used = _template_used(server, "probe")
        return used == f"{name}-2" and not _per_review_calls(fake_kube, before)

    for _ in range(2):  # each worker
        wait_until(next_name_without_a_call, what="the next name used without an API call")
    before = len(fake_kube.fake.calls)
    assert {_template_used(server, f"b{i}") for i in range(1000)} == {f"{name}-2"}
    assert _per_review_calls(fake_kube, before) == []


# --- finding 8: 403 and 404 are answers, not outages ---


def test_quota_refusing_the_template_is_not_an_outage(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.create_status = 403
    fake_kube.fake.create_message = (
        'resourceclaimtemplates.resource.k8s.io "gpu-nvidia-com-2-eed22583" is forbidden: exceeded quota: '
        "templates, requested: count/resourceclaimtemplates.resource.k8s.io=1, used: "
        "count/resourceclaimtemplates.resource.k8s.io=0, limited: count/resourceclaimtemplates.resource.k8s.io=0"
    )
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"apiUnavailable": "admit"}})
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert response["allowed"] is False, "admit mode must not admit a pod unconverted because of a quota"
    assert response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "a ResourceQuota of namespace team-a does not allow the ResourceClaimTemplate" in message
    assert "exceeded quota: templates" in message and "unavailable" not in message
    assert response["auditAnnotations"]["decision"] == "denied-forbidden"


def test_forbidden_by_rbac_names_the_webhook_permissions(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.create_status = 403
    fake_kube.fake.create_message = (
        'resourceclaimtemplates.resource.k8s.io is forbidden: User "system:serviceaccount:dra-migrate:dra-migrate" '
        'cannot create resource "resourceclaimtemplates"'
    )
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"apiUnavailable": "admit"}})
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert response["allowed"] is False and response["status"]["code"] == 403
    assert "RBAC" in response["status"]["message"] and "cannot create resource" in response["status"]["message"]


@pytest.mark.parametrize("where", ["namespace-read", "template-create"])
def test_missing_namespace_is_not_an_outage(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, where: str
) -> None:
    if where == "namespace-read":
        fake_kube.fake.implicit_namespaces = False
    else:  # the namespace went away between the read and the create
        fake_kube.fake.create_status = 404
        fake_kube.fake.create_message = 'namespaces "gone" not found'
        fake_kube.fake.create_kind = "namespaces"
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"apiUnavailable": "admit"}})
    response = server.review(make_review(gpu_pod(), namespace="gone"))
    assert response["allowed"] is False and response["status"]["code"] == 404
    assert "namespace gone does not exist" in response["status"]["message"]
    assert response["auditAnnotations"]["decision"] == "denied-not-found"
    assert fake_kube.fake.templates == {}


def test_a_real_outage_still_follows_the_policy(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.create_status = 503
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"apiUnavailable": "admit"}})
    response = server.review(make_review(gpu_pod(), namespace="team-a"))
    assert response["allowed"] is True and "patch" not in response
    assert response["auditAnnotations"]["decision"] == "admitted-unconverted"


# --- finding 12: converted pods must not escape a GPU quota ---


@pytest.mark.parametrize("watched", [True, False], ids=["from-the-watch", "listed-directly"])
def test_quota_gap_is_refused_by_default(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, watched: bool
) -> None:
    fake_kube.fake.add_quota("team-q", "gpu-quota", {"requests.nvidia.com/gpu": "1"})
    if not watched:
        fake_kube.fake.fail_status = 503  # no list, no watch: the copy never becomes current
    server = start_server(kubeconfig=kubeconfig, workers=1)
    if watched:
        watching(fake_kube.fake, "resourcequotas")
    else:
        wait_until(lambda: fake_kube.fake.calls_to("GET", "/resourcequotas") > 0, what="the first failed list")
        fake_kube.fake.fail_status = None
    response = server.review(make_review(gpu_pod(), namespace="team-q"))
    assert response["allowed"] is False and response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "ResourceQuota team-q/gpu-quota limits requests.nvidia.com/gpu" in message
    assert f'add "{DEVICES_KEY}"' in message and "webhook.quotaGap: deny" in message
    assert response["auditAnnotations"]["decision"] == "denied-quota-gap"
    assert _posts(fake_kube) == 0
    # Other namespaces are not affected.
    assert decoded_patch(server.review(make_review(gpu_pod(), namespace="team-free")))


def test_quota_gap_closed_by_the_device_class_key(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.add_quota("team-q", "gpu-quota", {"requests.nvidia.com/gpu": "1"})
    fake_kube.fake.add_quota("team-q", "claims", {DEVICES_KEY: "1"})
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourcequotas")
    response = server.review(make_review(gpu_pod(), namespace="team-q"))
    assert decoded_patch(response) and not any("ResourceQuota" in w for w in response["warnings"])


def test_a_scoped_quota_is_a_gap_whatever_unscoped_quotas_count(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    """A PriorityClass-scoped limit of 1 GPU: claims are never charged to scoped quotas, so an unscoped
    quota on the class key does not close it (a converted 4-GPU pod would pass it)."""
    scope: dict[str, Any] = {
        "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["low"]}]}
    }
    fake_kube.fake.add_quota("team-q", "low-priority-gpus", {"requests.nvidia.com/gpu": "1"}, **scope)
    fake_kube.fake.add_quota("team-q", "claims", {DEVICES_KEY: "8"})
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourcequotas")
    response = server.review(make_review(gpu_pod(count=4), namespace="team-q"))
    assert response["allowed"] is False and response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "ResourceQuota team-q/low-priority-gpus limits requests.nvidia.com/gpu" in message
    assert "never charged for ResourceClaims" in message
    assert _posts(fake_kube) == 0


@pytest.mark.parametrize("policy", ["warn", "convert"])
def test_quota_gap_policy_converts_anyway(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, policy: str
) -> None:
    fake_kube.fake.add_quota("team-q", "gpu-quota", {"requests.nvidia.com/gpu": "1"})
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"quotaGap": policy}})
    watching(fake_kube.fake, "resourcequotas")
    pod = gpu_pod()
    response = server.review(make_review(pod, namespace="team-q"))
    assert patched(pod, response) == convert(pod, at_admission(default_config())).object
    warned = [w for w in response["warnings"] if "ResourceQuota team-q/gpu-quota" in w]
    assert len(warned) == (1 if policy == "warn" else 0)


@pytest.mark.parametrize(("target", "gap"), [("1.34", True), ("1.36", False)])
def test_extended_resource_charging_follows_the_release(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path, target: str, gap: bool
) -> None:
    """With DRAExtendedResource on by default (the release table) and the class mapping the name, the
    claims are charged to requests.nvidia.com/gpu itself: no gap."""
    fake_kube.fake.add_device_class("gpu.nvidia.com", extended_resource_name="nvidia.com/gpu")
    fake_kube.fake.add_quota("team-q", "gpu-quota", {"requests.nvidia.com/gpu": "1"})
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"targetVersion": target})
    watching(fake_kube.fake, "resourcequotas", "deviceclasses")
    response = server.review(make_review(gpu_pod(), namespace="team-q"))
    assert (response["allowed"] is False) is gap


def test_quota_gap_in_audit_mode_is_a_warning(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake_kube.fake.add_quota("team-q", "gpu-quota", {"requests.nvidia.com/gpu": "1"})
    server = start_server(kubeconfig=kubeconfig, workers=1, config={"webhook": {"mode": "audit"}})
    watching(fake_kube.fake, "resourcequotas")
    response = server.review(make_review(gpu_pod(), namespace="team-q"))
    assert response["allowed"] is True and "patch" not in response
    assert any("quotaGap deny: ResourceQuota team-q/gpu-quota" in w for w in response["warnings"])


# --- serve --client-ca ---


def _client_cert(ca: CertifiedKey, directory: Path, name: str) -> tuple[Path, Path]:
    client = client_certificate(ca, name)
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(client.cert_pem())
    key_path.write_bytes(client.key_pem())
    return cert_path, key_path


def test_client_ca_requires_the_apiservers_certificate(
    start_server: StartServer, kubeconfig: Path, tmp_path: Path
) -> None:
    trusted, stranger = create_ca(common_name="apiserver clients"), create_ca(common_name="someone else")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(trusted.cert.public_bytes(serialization.Encoding.PEM))
    server = start_server(kubeconfig=kubeconfig, workers=1, extra_args=("--client-ca", str(ca_file)))
    review = make_review(gpu_pod())

    anonymous = server.post(review)
    assert anonymous.status_code == 401 and "client certificate" in anonymous.json()["message"]
    good = server.post(review, cert=tuple(map(str, _client_cert(trusted, tmp_path, "kube-apiserver"))))
    assert good.status_code == 200 and good.json()["response"]["allowed"] is True
    with pytest.raises(requests.exceptions.SSLError):
        server.post(review, cert=tuple(map(str, _client_cert(stranger, tmp_path, "intruder"))))
    # Probes and metrics stay reachable without a certificate (kubelet has none).
    assert server.session.get(f"{server.url}/readyz", timeout=5).status_code == 200
    assert server.session.get(f"{server.url}/metrics", timeout=5).status_code == 200


def test_client_ca_must_be_a_readable_bundle(tmp_path: Path, tls_dir: Path) -> None:
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    result = subprocess.run(
        [
            *SERVE_COMMAND,
            "serve",
            "--cert",
            str(tls_dir / "tls.crt"),
            "--key",
            str(tls_dir / "tls.key"),
            "--client-ca",
            str(empty),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0 and f"cannot use --client-ca {empty}" in result.stderr
    assert "Traceback" not in result.stderr
