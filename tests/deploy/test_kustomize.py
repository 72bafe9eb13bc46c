"""Build every Kustomize variant under deploy/ and check what the cluster would receive.

Each variant (the base alone and both overlays) is rendered with `kubectl kustomize`; the
output is checked for the properties the webhook relies on (admission settings, least-privilege
RBAC, a hardened highly available Deployment, certificate wiring) and every object whose kind
has a schema is validated against Kubernetes 1.34 in strict mode. cert-manager's CRDs have no
schema there; the test names exactly which objects it could not validate.

kubectl is found as deploy_support.py says. Without one the tests skip, except with CI=true,
where they fail.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from deploy_support import ThrowawayCerts, kustomize_build, of_kind, one, ref, write_throwaway_certs

from dra_migrate.configfile import parse_settings
from dra_migrate.webhook.deadline import REVIEW_SECONDS
from dra_migrate.webhook.policy import WEBHOOK_SECTION

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO_ROOT / "deploy"
SELF_SIGNED_TLS = PurePosixPath("overlays/self-signed/tls")
K8S_VERSION = "1.34.0"

Obj = dict[str, Any]

VARIANTS = ("base", "cert-manager", "self-signed")
VARIANT_DIRS = {
    "base": "base",
    "cert-manager": "overlays/cert-manager",
    "self-signed": "overlays/self-signed",
}

BASE_KINDS = [
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Deployment",
    "MutatingWebhookConfiguration",
    "Namespace",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "PriorityClass",
    "Service",
    "ServiceAccount",
]
EXPECTED_KINDS = {
    "base": sorted(BASE_KINDS),
    "cert-manager": sorted([*BASE_KINDS, "Certificate", "Certificate", "Issuer", "Issuer"]),
    "self-signed": sorted([*BASE_KINDS, "Secret"]),
}
# Objects kubernetes-validate has no schema for (CRDs). Anything else without a schema is a
# mistake (e.g. a misspelt apiVersion) and fails the test.
EXPECTED_UNVALIDATED = {
    "base": set[str](),
    "cert-manager": {
        "cert-manager.io/v1 Certificate/dra-migrate-ca",
        "cert-manager.io/v1 Certificate/dra-migrate-serving",
        "cert-manager.io/v1 Issuer/dra-migrate-ca",
        "cert-manager.io/v1 Issuer/dra-migrate-selfsigned",
    },
    "self-signed": set[str](),
}
CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "Namespace",
    "PriorityClass",
}

# The contract with the server: exactly these API permissions, nothing more.
# Reads are get/list/watch (the server's watched copies); the only write is creating templates.
EXPECTED_RBAC = {
    ("resource.k8s.io", "resourceclaimtemplates", "create"),
    # the collector of templates no pod uses (webhook/collector.py)
    ("resource.k8s.io", "resourceclaimtemplates", "patch"),
    ("resource.k8s.io", "resourceclaimtemplates", "delete"),
    ("", "pods", "list"),
    *(
        (group, resource, verb)
        for group, resource in (
            ("resource.k8s.io", "resourceclaimtemplates"),
            ("resource.k8s.io", "deviceclasses"),
            ("", "namespaces"),
            ("", "resourcequotas"),
        )
        for verb in ("get", "list", "watch")
    ),
}
TLS_SECRET = "dra-migrate-tls"
SERVER_PORT = 8443
RUN_AS_USER = 65532
SKIP_KEY = "dra-migrate.io/skip"
MATCH_CONDITIONS_MARKER = "# generated: dra-migrate webhook match-conditions"
PLACEHOLDER_CONDITION = "requests-mapped-resource-or-pins-node"


# --------------------------------------------------------------------------- builds


@dataclass(frozen=True)
class DeployCopy:
    root: Path
    certs: ThrowawayCerts


@pytest.fixture(scope="module")
def deploy_copy(tmp_path_factory: pytest.TempPathFactory) -> DeployCopy:
    """deploy/ copied to a temp dir (without any real keys) plus throwaway self-signed certs."""
    root = tmp_path_factory.mktemp("deploy-copy") / "deploy"
    real_tls = DEPLOY_DIR / SELF_SIGNED_TLS

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {"tls"} if Path(directory) == real_tls.parent and "tls" in names else set()

    shutil.copytree(DEPLOY_DIR, root, ignore=ignore)
    certs = write_throwaway_certs(root / SELF_SIGNED_TLS, service="dra-migrate", namespace="dra-migrate")
    return DeployCopy(root, certs)


@pytest.fixture(scope="module")
def builds(kubectl: str, deploy_copy: DeployCopy) -> dict[str, list[Obj]]:
    # base and cert-manager straight from the checkout; self-signed needs the generated tls/
    # files, so it is built from the temp copy.
    return {
        variant: kustomize_build(
            kubectl, (deploy_copy.root if variant == "self-signed" else DEPLOY_DIR) / VARIANT_DIRS[variant]
        )
        for variant in VARIANTS
    }


# --------------------------------------------------------------------------- helpers


def container(deployment: Obj) -> Obj:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "the webhook pod runs a single container"
    result: Obj = containers[0]
    return result


def webhook(objs: list[Obj]) -> Obj:
    hooks = one(objs, "MutatingWebhookConfiguration", "dra-migrate")["webhooks"]
    assert len(hooks) == 1, [h["name"] for h in hooks]
    result: Obj = hooks[0]
    return result


def flag(args: list[str], name: str) -> str:
    assert args.count(name) == 1, f"{name} must appear once in {args}"
    return args[args.index(name) + 1]


def container_port(ctr: Obj, port: int | str) -> int:
    """A Service targetPort or probe port (number or name) as the container port number."""
    if isinstance(port, int):
        return port
    by_name = {p["name"]: p["containerPort"] for p in ctr.get("ports", []) if "name" in p}
    assert port in by_name, f"port {port!r} is not a named container port ({by_name})"
    number: int = by_name[port]
    return number


def selector_matches(selector: Obj, labels: dict[str, str]) -> bool:
    assert not selector.get("matchExpressions"), "keep selectors to matchLabels"
    match_labels: dict[str, str] = selector.get("matchLabels", {})
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
_FACTORS = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_FACTORS.update({"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40})


def memory_bytes(quantity: str | int) -> float:
    match = _QUANTITY.match(str(quantity))
    assert match, f"unsupported memory quantity {quantity!r}"
    return float(match.group(1)) * _FACTORS[match.group(2)]


@dataclass(frozen=True)
class FileSource:
    """Where a file the container reads comes from."""

    kind: str  # "secret" | "configMap"
    name: str
    key: str
    mount: Obj


def _items_lookup(source: Obj, rel: str) -> str | None:
    items = source.get("items")
    if not items:
        return rel
    for item in items:
        if item["path"] == rel:
            key: str = item["key"]
            return key
    return None


def resolve_file(deployment: Obj, path: str) -> FileSource:
    """Follow a path in the container to the Secret/ConfigMap key mounted there."""
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    target = PurePosixPath(path)
    mounts = [
        m
        for m in container(deployment).get("volumeMounts", [])
        if target.is_relative_to(PurePosixPath(m["mountPath"])) and target != PurePosixPath(m["mountPath"])
    ]
    assert mounts, f"{path} is on no volume mount"
    mount = max(mounts, key=lambda m: len(m["mountPath"]))
    rel = str(target.relative_to(PurePosixPath(mount["mountPath"])))
    if mount.get("subPath"):
        rel = str(PurePosixPath(mount["subPath"]) / rel)
    volume = volumes[mount["name"]]
    candidates: list[tuple[str, Obj]] = []
    for kind in ("secret", "configMap"):
        if kind in volume:
            candidates.append((kind, volume[kind]))
    for source in volume.get("projected", {}).get("sources", []):
        candidates.extend((kind, source[kind]) for kind in ("secret", "configMap") if kind in source)
    for kind, source in candidates:
        key = _items_lookup(source, rel)
        if key is not None:
            name = source["secretName"] if kind == "secret" and "secretName" in source else source["name"]
            return FileSource(kind, name, key, mount)
    raise AssertionError(f"{path} (volume {mount['name']}, {rel}) comes from no Secret or ConfigMap key")


# --------------------------------------------------------------------------- every variant


@pytest.mark.parametrize("variant", VARIANTS)
def test_build_has_expected_objects(builds: dict[str, list[Obj]], variant: str) -> None:
    assert sorted(o["kind"] for o in builds[variant]) == EXPECTED_KINDS[variant]


@pytest.mark.parametrize("variant", VARIANTS)
def test_objects_validate_against_kubernetes_schema(
    builds: dict[str, list[Obj]], variant: str, record_property: Any
) -> None:
    errors: list[str] = []
    unvalidated: set[str] = set()
    for obj in builds[variant]:
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            unvalidated.add(ref(obj))
        except kubernetes_validate.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            errors.append(f"{ref(obj)}: {where}: {exc.message}")
    print(f"{variant}: not schema-validated (no schema in Kubernetes {K8S_VERSION}): {sorted(unvalidated)}")
    record_property("not_schema_validated", sorted(unvalidated))
    assert not errors, "\n".join(errors)
    assert unvalidated == EXPECTED_UNVALIDATED[variant], (
        f"objects without a Kubernetes {K8S_VERSION} schema: {sorted(unvalidated)}; "
        "only cert-manager CRDs may lack one (misspelt apiVersion/kind?)"
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_namespaces_are_consistent(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    namespace = one(objs, "Namespace")["metadata"]["name"]
    for obj in objs:
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"], ref(obj)
        else:
            assert obj["metadata"].get("namespace") == namespace, ref(obj)


@pytest.mark.parametrize("variant", VARIANTS)
def test_mutating_webhook_configuration(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    hook = webhook(objs)
    service = one(objs, "Service", "dra-migrate")
    namespace = service["metadata"]["namespace"]

    assert len(hook["name"].split(".")) >= 3, hook["name"]
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "NoneOnDryRun"
    assert 1 <= hook["timeoutSeconds"] <= 10
    assert hook["failurePolicy"] == "Fail"
    assert hook["reinvocationPolicy"] == "IfNeeded"
    assert hook["matchPolicy"] == "Equivalent"
    assert hook["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]

    client = hook["clientConfig"]
    assert "url" not in client
    assert client["service"] == {
        "name": service["metadata"]["name"],
        "namespace": namespace,
        "path": "/mutate",
        "port": service["spec"]["ports"][0]["port"],
    }

    ns_exprs = hook["namespaceSelector"]["matchExpressions"]
    assert "matchLabels" not in hook["namespaceSelector"]
    by_name = [e for e in ns_exprs if e["key"] == "kubernetes.io/metadata.name"]
    assert len(by_name) == 1 and by_name[0]["operator"] == "NotIn"
    assert {"kube-system", namespace} <= set(by_name[0]["values"])
    assert {"key": SKIP_KEY, "operator": "NotIn", "values": ["true"]} in ns_exprs
    assert hook["objectSelector"] == {"matchExpressions": [{"key": SKIP_KEY, "operator": "NotIn", "values": ["true"]}]}

    conditions = hook["matchConditions"]
    names = [c["name"] for c in conditions]
    assert PLACEHOLDER_CONDITION in names
    assert len(names) == len(set(names)) and len(names) <= 64
    assert all(isinstance(c["expression"], str) and c["expression"] for c in conditions)


@pytest.mark.parametrize("variant", VARIANTS)
def test_rbac_is_exactly_least_privilege(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    assert not of_kind(objs, "Role") and not of_kind(objs, "RoleBinding")
    role = one(objs, "ClusterRole")
    granted = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, f"unexpected rule fields: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    granted.add((group, resource, verb))
    assert granted == EXPECTED_RBAC
    assert "aggregationRule" not in role

    binding = one(objs, "ClusterRoleBinding")
    account = one(objs, "ServiceAccount")
    deployment = one(objs, "Deployment", "dra-migrate")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": account["metadata"]["name"],
            "namespace": account["metadata"]["namespace"],
        }
    ]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert pod.get("automountServiceAccountToken", True) is True, "in-cluster config needs the token"


@pytest.mark.parametrize("variant", VARIANTS)
def test_deployment_is_highly_available(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    deployment = one(objs, "Deployment", "dra-migrate")
    spec = deployment["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    pod = spec["template"]["spec"]

    assert spec["replicas"] == 3  # Kyverno's and cert-manager's recommendation for admission webhooks
    assert selector_matches(spec["selector"], pod_labels)
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0

    anti = pod["affinity"]["podAntiAffinity"]
    terms = [*anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])]
    terms += [w["podAffinityTerm"] for w in anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
    assert any(
        t["topologyKey"] == "kubernetes.io/hostname" and selector_matches(t["labelSelector"], pod_labels) for t in terms
    ), "replicas must be spread over nodes"

    spread = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
    for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone"):
        assert spread[key]["maxSkew"] == 1 and selector_matches(spread[key]["labelSelector"], pod_labels), key
        # A spread that cannot be met must not leave a webhook replica Pending (failurePolicy: Fail).
        assert spread[key]["whenUnsatisfiable"] == "ScheduleAnyway", key

    pdb = one(objs, "PodDisruptionBudget")
    # At most one replica away at a time, so at least two of three keep answering.
    assert pdb["spec"].get("maxUnavailable") == 1 and "minAvailable" not in pdb["spec"]
    assert selector_matches(pdb["spec"]["selector"], pod_labels)

    grace = pod["terminationGracePeriodSeconds"]
    pre_stop = container(deployment).get("lifecycle", {}).get("preStop", {})
    sleep = pre_stop.get("sleep", {}).get("seconds", 0)
    assert sleep < grace, "the preStop delay must leave time for gunicorn's graceful shutdown"

    priority = pod.get("priorityClassName")
    if priority is not None:
        assert not priority.startswith("system-"), "system-* classes are quota-limited to kube-system"
        one(objs, "PriorityClass", priority)


@pytest.mark.parametrize("variant", VARIANTS)
def test_deployment_probes_and_resources(builds: dict[str, list[Obj]], variant: str) -> None:
    ctr = container(one(builds[variant], "Deployment", "dra-migrate"))
    assert [p["containerPort"] for p in ctr["ports"]] == [SERVER_PORT]

    for probe_name, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        http = ctr[probe_name]["httpGet"]
        assert http["path"] == path, probe_name
        assert http["scheme"] == "HTTPS", probe_name
        assert container_port(ctr, http["port"]) == SERVER_PORT, probe_name
    if "startupProbe" in ctr:
        assert ctr["startupProbe"]["httpGet"]["scheme"] == "HTTPS"

    resources = ctr["resources"]
    request = memory_bytes(resources["requests"]["memory"])
    limit = memory_bytes(resources["limits"]["memory"])
    assert 0 < request <= limit
    assert "cpu" in resources["requests"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_deployment_is_hardened(builds: dict[str, list[Obj]], variant: str) -> None:
    deployment = one(builds[variant], "Deployment", "dra-migrate")
    pod = deployment["spec"]["template"]["spec"]
    ctr = container(deployment)
    pod_sc: Obj = pod.get("securityContext", {})
    ctr_sc: Obj = ctr.get("securityContext", {})

    def effective(key: str) -> Any:
        return ctr_sc.get(key, pod_sc.get(key))

    assert effective("runAsNonRoot") is True
    assert effective("runAsUser") == RUN_AS_USER
    assert effective("seccompProfile") == {"type": "RuntimeDefault"}
    assert ctr_sc["readOnlyRootFilesystem"] is True
    assert ctr_sc["allowPrivilegeEscalation"] is False
    assert ctr_sc["capabilities"] == {"drop": ["ALL"]}
    assert not ctr_sc.get("privileged", False)
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")

    # A writable /tmp (gunicorn worker heartbeat) on the read-only root filesystem.
    volumes = {v["name"]: v for v in pod["volumes"]}
    tmp = [m for m in ctr["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert len(tmp) == 1 and "emptyDir" in volumes[tmp[0]["name"]]


@pytest.mark.parametrize("variant", VARIANTS)
def test_server_files_come_from_mounted_config_and_secret(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    deployment = one(objs, "Deployment", "dra-migrate")
    ctr = container(deployment)
    args: list[str] = ctr["args"]
    assert args[0] == "serve"
    assert flag(args, "--port") == str(SERVER_PORT)

    config = resolve_file(deployment, flag(args, "--config"))
    assert (config.kind, config.key) == ("configMap", "config.yaml")
    config_map = one(objs, "ConfigMap", config.name)
    assert config.name != "dra-migrate-config", "the generator's hash suffix rolls pods on config changes"
    assert "config.yaml" in config_map["data"]

    for flag_name, key in (("--cert", "tls.crt"), ("--key", "tls.key")):
        source = resolve_file(deployment, flag(args, flag_name))
        assert (source.kind, source.name, source.key) == ("secret", TLS_SECRET, key), flag_name
        # subPath mounts never see a rotated Secret; the server hot-reloads the files.
        assert "subPath" not in source.mount and "subPathExpr" not in source.mount, flag_name


@pytest.mark.parametrize("variant", VARIANTS)
def test_default_config_is_valid(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    config_map = one(objs, "ConfigMap")
    raw = yaml.safe_load(config_map["data"]["config.yaml"])
    assert isinstance(raw, dict)
    hook_cfg = raw.get("webhook", {})
    # The server must give up on the API (and apply apiUnavailable) before the API server gives
    # up on the webhook call.
    assert hook_cfg.get("apiTimeoutSeconds", 2) < webhook(objs)["timeoutSeconds"]
    # The server's review deadline is this timeout (an AdmissionReview carries none).
    assert webhook(objs)["timeoutSeconds"] == REVIEW_SECONDS

    # The server's own validation of the whole file (engine sections and the webhook's).
    settings = parse_settings(raw)
    # The release comes from the cluster unless the file pins it.
    assert not settings.target_given
    # The server applies the same namespace selection as the configuration's namespaceSelector,
    # for POSTs that bypass it.
    hook = webhook(objs)
    by_name = [e for e in hook["namespaceSelector"]["matchExpressions"] if e["key"] == "kubernetes.io/metadata.name"]
    assert set(settings.get(WEBHOOK_SECTION).excluded_namespaces) == set(by_name[0]["values"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_network_policy_opens_only_the_webhook_port(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    policy = one(objs, "NetworkPolicy")["spec"]
    pod = one(objs, "Deployment")["spec"]["template"]
    assert selector_matches(policy["podSelector"], pod["metadata"]["labels"])
    assert policy["policyTypes"] == ["Ingress"]
    [container] = pod["spec"]["containers"]
    [port] = [p for p in container["ports"] if p["name"] == "https"]
    assert port["containerPort"] == SERVER_PORT
    assert policy["ingress"] == [{"ports": [{"protocol": "TCP", "port": "https"}]}]


@pytest.mark.parametrize("variant", VARIANTS)
def test_service_targets_server_port(builds: dict[str, list[Obj]], variant: str) -> None:
    objs = builds[variant]
    service = one(objs, "Service", "dra-migrate")
    deployment = one(objs, "Deployment", "dra-migrate")
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP"
    (port,) = service["spec"]["ports"]
    assert port["port"] == 443
    assert container_port(container(deployment), port["targetPort"]) == SERVER_PORT
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


# --------------------------------------------------------------------------- per variant


def test_base_leaves_certificates_to_the_overlays(builds: dict[str, list[Obj]]) -> None:
    objs = builds["base"]
    assert not of_kind(objs, "Secret")
    mwc = one(objs, "MutatingWebhookConfiguration", "dra-migrate")
    assert "caBundle" not in webhook(objs)["clientConfig"]
    assert "cert-manager.io/inject-ca-from" not in mwc["metadata"].get("annotations", {})


def test_cert_manager_overlay_issues_and_injects(builds: dict[str, list[Obj]]) -> None:
    objs = builds["cert-manager"]
    namespace = one(objs, "Namespace")["metadata"]["name"]
    service = one(objs, "Service", "dra-migrate")["metadata"]["name"]
    assert not of_kind(objs, "Secret"), "cert-manager writes the Secret"

    serving = one(objs, "Certificate", "dra-migrate-serving")["spec"]
    assert serving["secretName"] == TLS_SECRET
    assert set(serving["dnsNames"]) == {
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    }
    assert serving["privateKey"]["algorithm"] == "ECDSA"
    assert serving["privateKey"]["size"] == 256
    assert not serving.get("isCA", False)

    # serving <- CA Issuer <- CA Certificate (isCA) <- self-signed Issuer
    ca_issuer = one(objs, "Issuer", serving["issuerRef"]["name"])
    assert serving["issuerRef"]["kind"] == "Issuer"
    ca_certs = [c for c in of_kind(objs, "Certificate") if c["spec"].get("isCA")]
    assert len(ca_certs) == 1
    ca_cert = ca_certs[0]["spec"]
    assert ca_issuer["spec"]["ca"]["secretName"] == ca_cert["secretName"]
    assert "selfSigned" in one(objs, "Issuer", ca_cert["issuerRef"]["name"])["spec"]

    mwc = one(objs, "MutatingWebhookConfiguration", "dra-migrate")
    assert mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (f"{namespace}/dra-migrate-serving")
    assert "caBundle" not in webhook(objs)["clientConfig"], "cainjector owns the caBundle"


def test_self_signed_overlay_sets_secret_and_ca_bundle(builds: dict[str, list[Obj]], deploy_copy: DeployCopy) -> None:
    objs = builds["self-signed"]
    secret = one(objs, "Secret", TLS_SECRET)  # exact name: no hash suffix
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}, "ca.key must stay out of the cluster"
    assert base64.b64decode(secret["data"]["tls.crt"]) == deploy_copy.certs.tls_crt_pem

    ca_bundle = webhook(objs)["clientConfig"]["caBundle"]
    decoded = base64.b64decode("".join(ca_bundle.split()), validate=True)
    assert decoded == deploy_copy.certs.ca_pem
    x509.load_pem_x509_certificate(decoded)


# --------------------------------------------------------------------------- source files


def kustomization_files() -> Iterator[Path]:
    yield from sorted(DEPLOY_DIR.rglob("kustomization.yaml"))


def test_every_kustomization_says_what_it_is_for() -> None:
    files = list(kustomization_files())
    assert {str(p.parent.relative_to(DEPLOY_DIR)) for p in files} >= set(VARIANT_DIRS.values())
    for path in files:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# ") and len(first) > 10, f"{path}: start with a header comment"


def test_match_conditions_placeholder_is_marked_for_the_generator() -> None:
    text = (DEPLOY_DIR / "base" / "mutatingwebhookconfiguration.yaml").read_text(encoding="utf-8")
    assert text.count(MATCH_CONDITIONS_MARKER) == 1
    assert f"name: {PLACEHOLDER_CONDITION}" in text


def test_generated_keys_are_git_ignored() -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    probe = DEPLOY_DIR / SELF_SIGNED_TLS / "ca.key"
    result = subprocess.run(
        [git, "-C", str(REPO_ROOT), "check-ignore", "-q", str(probe)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode == 128:
        pytest.skip(f"not a git checkout: {result.stderr.strip()}")
    assert result.returncode == 0, f"{probe.relative_to(REPO_ROOT)} is not git-ignored"
