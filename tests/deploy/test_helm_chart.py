"""The Helm chart in deploy/helm/dra-migrate, rendered by the real helm.

- `helm lint --strict` passes for every certificate source;
- the rendered objects validate (kubernetes-validate, strict) against every supported release;
- the chart renders the same objects as the Kustomize overlays, except for the differences listed
  in DOCUMENTED_DIFFERENCES (test_chart_matches_kustomize);
- the shipped matchConditions are the generator's output for the default configuration, and the
  chart refuses them for a configuration they do not fit;
- the values (mode, strategy, targetVersion, config, replicas, resources, certificates,
  NetworkPolicy) reach the objects, and a bad value fails with a message naming it.

helm is found as deploy_support.py says (tests/deploy/build-helm.sh builds it).
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from deploy_support import (
    CHART_DIR,
    DEPLOY_DIR,
    Helm,
    Obj,
    ThrowawayCerts,
    kustomize_build,
    of_kind,
    one,
    ref,
    write_throwaway_certs,
)

from dra_migrate.configfile import parse_settings
from dra_migrate.engine import ConfigError
from dra_migrate.webhook.match_conditions import match_conditions
from dra_migrate.webhook.policy import WEBHOOK_SECTION

# Every release dra-migrate targets; kubernetes-validate must have a schema for each.
SUPPORTED_RELEASES = ("1.32", "1.33", "1.34", "1.35", "1.36", "1.37")
NAMESPACE = "dra-migrate"
CERT_MANAGER_OBJECTS = {
    "cert-manager.io/v1 Certificate/dra-migrate-ca",
    "cert-manager.io/v1 Certificate/dra-migrate-serving",
    "cert-manager.io/v1 Issuer/dra-migrate-ca",
    "cert-manager.io/v1 Issuer/dra-migrate-selfsigned",
}
# Labels Helm adds (and the selectors that carry the release name so two releases never select
# each other's pods); the Kustomize base has none of them.
HELM_LABELS = {
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "helm.sh/chart",
}
HASHED_CONFIG_MAP = re.compile(r"^(dra-migrate-config)-[a-z0-9]{10}$")

# What differs between the chart and deploy/ on purpose, and the word docs/deployment.md's "Install with
# Helm" uses for each (test_documented_differences_are_in_the_docs).
DOCUMENTED_DIFFERENCES = {
    "namespace": "Helm installs into an existing release namespace (helm install -n NS --create-namespace); "
    "a chart that also creates that namespace cannot be installed",
    "networkPolicy.from": "the chart's NetworkPolicy can be narrowed by a value; deploy/base by an overlay",
    "checksum/config": "deploy/base's generator adds a content hash to the ConfigMap name; the chart rolls "
    "the pods through a checksum/config annotation instead",
    "app.kubernetes.io/instance": "Helm's labels (instance, also in selectors; managed-by, version, helm.sh/chart)",
    "Secret": "both make a fresh CA and serving certificate; only their wiring is compared",
}


# --------------------------------------------------------------------------- rendering


@pytest.fixture(scope="module")
def rendered(helm: Helm) -> list[Obj]:
    return helm.template()


def config_of(objs: list[Obj]) -> Obj:
    config_map = one(objs, "ConfigMap")
    loaded = yaml.safe_load(config_map["data"]["config.yaml"])
    assert isinstance(loaded, dict)
    return loaded


def webhook_entry(objs: list[Obj]) -> Obj:
    [hook] = one(objs, "MutatingWebhookConfiguration")["webhooks"]
    result: Obj = hook
    return result


def container(objs: list[Obj]) -> Obj:
    [ctr] = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    result: Obj = ctr
    return result


def render_error(helm: Helm, **kwargs: Any) -> str:
    result = helm.render(**kwargs)
    assert result.returncode != 0, f"helm template accepted {kwargs}:\n{result.stdout[:2000]}"
    assert "panic" not in result.stderr and "goroutine" not in result.stderr, result.stderr
    return result.stderr


def dra_migrate(*args: str) -> str:
    executable = Path(sys.executable).with_name("dra-migrate")
    result = subprocess.run([str(executable), *args], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


# --------------------------------------------------------------------------- lint and schemas


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"certificate": {"source": "certManager"}},
        {"certificate": {"source": "secret", "secret": {"caBundle": "Y2E="}}},
        {"networkPolicy": {"enabled": False}, "priorityClass": {"create": False}},
        {"clientCA": {"configMap": "dra-migrate-client-ca"}},
    ],
    ids=["default", "cert-manager", "existing-secret", "no-networkpolicy-no-priorityclass", "client-ca"],
)
def test_helm_lint_strict(helm: Helm, values: Obj, tmp_path: Path) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values), encoding="utf-8")
    result = helm.run("lint", "--strict", str(CHART_DIR), "--namespace", NAMESPACE, "--values", str(values_file))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_kubernetes_validate_has_every_supported_release() -> None:
    versions = map(kubernetes_validate.utils.Version, kubernetes_validate.utils.all_versions())
    known = {f"{v.major}.{v.minor}" for v in versions}
    assert set(SUPPORTED_RELEASES) <= known, f"kubernetes-validate lacks schemas for {set(SUPPORTED_RELEASES) - known}"


@pytest.mark.parametrize("release", SUPPORTED_RELEASES)
@pytest.mark.parametrize("source", ["helm", "certManager"])
def test_rendered_objects_validate_strictly(helm: Helm, release: str, source: str) -> None:
    objs = helm.template(values={"certificate": {"source": source}}, kube_version=f"{release}.0")
    errors: list[str] = []
    unvalidated: set[str] = set()
    for obj in objs:
        try:
            kubernetes_validate.validate(obj, f"{release}.0", strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            unvalidated.add(ref(obj))
        except kubernetes_validate.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            errors.append(f"{ref(obj)}: {where}: {exc.message}")
    assert not errors, "\n".join(errors)
    # Only cert-manager's CRDs have no schema; anything else would be a misspelt apiVersion or kind.
    assert unvalidated == (CERT_MANAGER_OBJECTS if source == "certManager" else set())


def test_chart_refuses_releases_without_dra(helm: Helm) -> None:
    assert "kubeVersion" in render_error(helm, kube_version="1.31.0")


# --------------------------------------------------------------------------- equivalence with deploy/


@pytest.fixture(scope="module")
def self_signed_overlay(kubectl: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Obj], ThrowawayCerts]:
    """deploy/overlays/self-signed built from a copy of deploy/ with throwaway tls/ files."""
    import shutil

    root = tmp_path_factory.mktemp("deploy") / "deploy"
    shutil.copytree(DEPLOY_DIR, root, ignore=shutil.ignore_patterns("tls", "helm"))
    certs = write_throwaway_certs(root / "overlays/self-signed/tls", service="dra-migrate", namespace=NAMESPACE)
    return kustomize_build(kubectl, root / "overlays/self-signed"), certs


def _strip_helm_labels(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("labels", "matchLabels", "selector") and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k not in HELM_LABELS}
            out[key] = _strip_helm_labels(item)
        return out
    if isinstance(value, list):
        return [_strip_helm_labels(item) for item in value]
    return value


def _normalized(objs: list[Obj]) -> dict[str, Obj]:
    """Objects by kind/name with the documented differences taken out."""
    out: dict[str, Obj] = {}
    for original in objs:
        obj = _strip_helm_labels(original)
        kind = obj["kind"]
        if kind == "ConfigMap":
            obj["metadata"]["name"] = HASHED_CONFIG_MAP.sub(r"\1", obj["metadata"]["name"])
            obj["data"] = {"config.yaml": yaml.safe_load(obj["data"]["config.yaml"])}
        elif kind == "Deployment":
            template = obj["spec"]["template"]
            template["metadata"].pop("annotations", None)  # checksum/config
            for volume in template["spec"]["volumes"]:
                for source in volume.get("projected", {}).get("sources", []):
                    if "configMap" in source:
                        source["configMap"]["name"] = HASHED_CONFIG_MAP.sub(r"\1", source["configMap"]["name"])
        elif kind == "Secret":
            obj["data"] = sorted(obj["data"])
        elif kind == "MutatingWebhookConfiguration":
            for hook in obj["webhooks"]:
                hook["clientConfig"].pop("caBundle", None)  # compared by _ca_bundle_matches_secret
        out[f"{kind}/{obj['metadata']['name']}"] = obj
    return out


def _ca_bundle_matches_secret(objs: list[Obj]) -> None:
    secret = one(objs, "Secret", "dra-migrate-tls")
    bundle = webhook_entry(objs)["clientConfig"]["caBundle"]
    assert base64.b64decode(bundle) == base64.b64decode(secret["data"]["ca.crt"])


@pytest.mark.parametrize("overlay", ["self-signed", "cert-manager"])
def test_chart_matches_kustomize(
    helm: Helm, kubectl: str, self_signed_overlay: tuple[list[Obj], ThrowawayCerts], overlay: str
) -> None:
    if overlay == "self-signed":
        kustomized, _ = self_signed_overlay
        charted = helm.template()
        _ca_bundle_matches_secret(kustomized)
        _ca_bundle_matches_secret(charted)
    else:
        kustomized = kustomize_build(kubectl, DEPLOY_DIR / "overlays" / "cert-manager")
        charted = helm.template(values={"certificate": {"source": "certManager"}})

    assert one(kustomized, "Deployment")["spec"]["replicas"] == one(charted, "Deployment")["spec"]["replicas"] == 3

    base, chart = _normalized(kustomized), _normalized(charted)
    assert "Namespace/dra-migrate" in base
    base.pop("Namespace/dra-migrate")
    base_policies = {key for key in base if key.startswith("NetworkPolicy/")}
    chart_policies = {key for key in chart if key.startswith("NetworkPolicy/")}
    assert chart_policies, "the chart ships a NetworkPolicy by default"
    if not base_policies:
        for key in chart_policies:
            chart.pop(key)
    assert sorted(chart) == sorted(base), "kinds/names differ beyond DOCUMENTED_DIFFERENCES"
    for key in sorted(base):
        assert chart[key] == base[key], f"{key} differs from deploy/ ({overlay})"


def test_client_certificates_are_wired_the_same_by_the_chart_and_the_kustomize_component(
    helm: Helm, kubectl: str, tmp_path: Path
) -> None:
    """`clientCA.configMap` and deploy/components/client-ca: serve --client-ca with the CA from the
    ConfigMap, in the same projected volume as the configuration and the serving certificate."""
    import shutil

    root = tmp_path / "deploy"
    shutil.copytree(DEPLOY_DIR, root, ignore=shutil.ignore_patterns("tls", "helm"))
    overlay = root / "overlays" / "with-client-ca"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources:\n- ../cert-manager\ncomponents:\n- ../../components/client-ca\n", encoding="utf-8"
    )
    kustomized = one(kustomize_build(kubectl, overlay), "Deployment")["spec"]["template"]["spec"]
    charted = one(
        helm.template(
            values={"certificate": {"source": "certManager"}, "clientCA": {"configMap": "dra-migrate-client-ca"}}
        ),
        "Deployment",
    )["spec"]["template"]["spec"]
    for spec in (kustomized, charted):
        args = spec["containers"][0]["args"]
        assert args[args.index("--client-ca") + 1] == "/etc/dra-migrate/client-ca/ca.crt"
        sources = spec["volumes"][0]["projected"]["sources"]
        assert {
            "configMap": {"name": "dra-migrate-client-ca", "items": [{"key": "ca.crt", "path": "client-ca/ca.crt"}]}
        } in sources
    assert kustomized["containers"][0]["args"] == charted["containers"][0]["args"]
    assert "--client-ca" not in container(helm.template())["args"]  # off by default


def test_documented_differences_are_in_the_docs() -> None:
    page = (DEPLOY_DIR.parent / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = page.split("\n## Install with Helm\n", 1)[1].split("\n## ", 1)[0]
    for topic in DOCUMENTED_DIFFERENCES:
        assert topic in section, f"docs/deployment.md 'Install with Helm' does not mention {topic}"


# --------------------------------------------------------------------------- matchConditions


def test_shipped_match_conditions_are_the_generated_ones(rendered: list[Obj]) -> None:
    shipped = yaml.safe_load((CHART_DIR / "files" / "match-conditions.yaml").read_text(encoding="utf-8"))
    generated = yaml.safe_load(dra_migrate("webhook", "match-conditions"))
    assert shipped == generated, "regenerate: dra-migrate webhook match-conditions > files/match-conditions.yaml"
    assert webhook_entry(rendered)["matchConditions"] == generated
    # ... and they fit the configuration the chart renders by default.
    assert match_conditions(parse_settings(config_of(rendered)).config) == generated


@pytest.mark.parametrize(
    "config",
    [
        {"mappings": [{"resource": "acme.com/fpga", "deviceClassName": "fpga.acme.com"}]},
        {"builtinMappings": False},
        {"nodeName": {"scope": "all"}},
    ],
    ids=["own-mapping", "no-builtins", "scope-all"],
)
def test_default_conditions_are_refused_for_other_configurations(helm: Helm, config: Obj, tmp_path: Path) -> None:
    config_file = tmp_path / "dra-migrate.yaml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    error = render_error(helm, set_files={"config": config_file})
    assert "matchConditions" in error and "dra-migrate webhook match-conditions" in error

    # The documented way: generate them from the same file and hand both to the chart.
    conditions_file = tmp_path / "match-conditions.yaml"
    conditions_file.write_text(dra_migrate("webhook", "match-conditions", "--config", str(config_file)))
    objs = helm.template(set_files={"config": config_file, "matchConditions": conditions_file})
    # the chart adds only the namespaces its namespaceSelector excludes
    excluded = {"webhook": {"excludedNamespaces": ["kube-system", one(objs, "ConfigMap")["metadata"]["namespace"]]}}
    assert config_of(objs) == {**config, **excluded}
    assert webhook_entry(objs)["matchConditions"] == match_conditions(parse_settings(config).config)
    assert webhook_entry(objs)["matchConditions"] != yaml.safe_load(dra_migrate("webhook", "match-conditions"))


def test_match_conditions_as_a_values_list(helm: Helm) -> None:
    own = [{"name": "only-acme", "expression": "object.metadata.name == 'acme'"}]
    objs = helm.template(values={"config": {"builtinMappings": False}, "matchConditions": own})
    assert webhook_entry(objs)["matchConditions"] == own


# --------------------------------------------------------------------------- values


def test_defaults(rendered: list[Obj]) -> None:
    assert one(rendered, "Deployment")["spec"]["replicas"] == 3
    assert container(rendered)["image"] == "dra-migrate:0.1.0"
    assert container(rendered)["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"memory": "512Mi"},
    }
    config = config_of(rendered)
    assert config["webhook"]["mode"] == "enforce" and "strategy" not in config
    parse_settings(config)


def test_mode_target_and_replicas_values(helm: Helm) -> None:
    objs = helm.template(
        values={
            "mode": "audit",
            "targetVersion": "1.36",
            "replicas": 5,
            "resources": {"requests": {"cpu": "250m", "memory": "300Mi"}, "limits": {"memory": "1Gi"}},
            "image": {"repository": "registry.example.com/dra-migrate", "tag": "0.2.0"},
        }
    )
    config = config_of(objs)
    assert config["webhook"]["mode"] == "audit" and config["targetVersion"] == "1.36"
    assert config["webhook"]["apiUnavailable"] == "deny", "the rest of `config` is kept"
    settings = parse_settings(config)
    assert settings.get(WEBHOOK_SECTION).mode == "audit"
    assert one(objs, "Deployment")["spec"]["replicas"] == 5
    assert container(objs)["resources"]["limits"] == {"memory": "1Gi"}
    assert container(objs)["image"] == "registry.example.com/dra-migrate:0.2.0"


def test_config_change_rolls_the_pods(helm: Helm, rendered: list[Obj]) -> None:
    def checksum(objs: list[Obj]) -> str:
        value: str = one(objs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    assert checksum(helm.template(values={"mode": "audit"})) != checksum(rendered)


@pytest.mark.parametrize("strategy", ["auto", "claims", "extendedResource"])
def test_strategy_value_reaches_the_configuration(helm: Helm, strategy: str) -> None:
    config = config_of(helm.template(values={"strategy": strategy}))
    assert config["strategy"] == strategy
    try:
        parse_settings(config)
    except ConfigError as exc:
        if "strategy" not in str(exc):
            raise
        pytest.xfail(f"this dra-migrate build does not know the `strategy` key yet: {exc}")


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"mode": "dry-run"}, "mode"),
        ({"strategy": "rewrite"}, "strategy"),
        ({"targetVersion": "latest"}, "targetVersion"),
        ({"replicas": 0}, "replicas"),
        ({"certificate": {"source": "vault"}}, "source"),
        ({"certificate": {"source": "secret"}}, "caBundle"),
        ({"config": {"webhook": {"apiTimeoutSeconds": 5}}}, "apiTimeoutSeconds"),
        ({"matchConditions": [{"name": "x"}]}, "expression"),
        ({"replica": 2}, "replica"),
    ],
)
def test_bad_values_fail_naming_the_value(helm: Helm, values: Obj, named: str) -> None:
    assert named in render_error(helm, values=values)


# --------------------------------------------------------------------------- certificates


def test_helm_made_certificate_serves_the_service(rendered: list[Obj]) -> None:
    secret = one(rendered, "Secret", "dra-migrate-tls")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}, "the CA key stays out of the cluster"
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    key = load_pem_private_key(base64.b64decode(secret["data"]["tls.key"]), password=None)

    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert key.public_key().public_numbers() == leaf.public_key().public_numbers()  # type: ignore[union-attr]
    alt_names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    sans = set(alt_names.get_values_for_type(x509.DNSName))
    assert sans == {
        "dra-migrate",
        "dra-migrate.dra-migrate",
        "dra-migrate.dra-migrate.svc",
        "dra-migrate.dra-migrate.svc.cluster.local",
    }
    _ca_bundle_matches_secret(rendered)


def test_cert_manager_source_injects_the_ca(helm: Helm) -> None:
    objs = helm.template(values={"certificate": {"source": "certManager"}})
    assert not of_kind(objs, "Secret"), "cert-manager writes the Secret"
    assert {ref(o) for o in objs if o["apiVersion"].startswith("cert-manager.io/")} == CERT_MANAGER_OBJECTS
    mwc = one(objs, "MutatingWebhookConfiguration")
    assert mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "dra-migrate/dra-migrate-serving"
    assert "caBundle" not in webhook_entry(objs)["clientConfig"]
    assert one(objs, "Certificate", "dra-migrate-serving")["spec"]["secretName"] == "dra-migrate-tls"


def test_existing_secret_source(helm: Helm, tmp_path: Path) -> None:
    certs = write_throwaway_certs(tmp_path / "tls", service="dra-migrate", namespace=NAMESPACE)
    bundle = base64.b64encode(certs.ca_pem).decode()
    objs = helm.template(values={"certificate": {"source": "secret", "secret": {"caBundle": bundle}}})
    assert not of_kind(objs, "Secret"), "the Secret is the user's"
    assert webhook_entry(objs)["clientConfig"]["caBundle"] == bundle


def test_names_follow_the_release(helm: Helm) -> None:
    objs = helm.template(release="gpu", namespace="platform")
    names = {ref(o) for o in objs}
    assert "apps/v1 Deployment/gpu-dra-migrate" in names
    assert "scheduling.k8s.io/v1 PriorityClass/gpu-dra-migrate-webhook" in names
    service = webhook_entry(objs)["clientConfig"]["service"]
    assert service == {"name": "gpu-dra-migrate", "namespace": "platform", "path": "/mutate", "port": 443}
    excluded = webhook_entry(objs)["namespaceSelector"]["matchExpressions"][0]["values"]
    assert excluded == ["kube-system", "platform"], "the webhook never gates its own namespace"
    secret = one(objs, "Secret", "gpu-dra-migrate-tls")
    leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "gpu-dra-migrate.platform.svc" in sans.get_values_for_type(x509.DNSName)


# --------------------------------------------------------------------------- NetworkPolicy


def test_network_policy_allows_only_the_webhook_port(rendered: list[Obj]) -> None:
    policy = one(rendered, "NetworkPolicy")
    deployment = one(rendered, "Deployment")
    assert policy["spec"]["podSelector"] == deployment["spec"]["selector"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    assert rule == {"ports": [{"port": "https", "protocol": "TCP"}]}
    ports = {p["name"]: p["containerPort"] for p in container(rendered)["ports"]}
    assert ports == {"https": 8443}


def test_network_policy_values(helm: Helm) -> None:
    assert not of_kind(helm.template(values={"networkPolicy": {"enabled": False}}), "NetworkPolicy")
    peers = [{"ipBlock": {"cidr": "10.0.0.0/16"}}]
    policy = one(helm.template(values={"networkPolicy": {"from": peers}}), "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"] == peers


def test_the_schema_enums_are_the_codes() -> None:
    """The chart's `mode` and `strategy` values are what the server accepts, from the code's enums."""
    import json

    from dra_migrate.engine import Strategy
    from dra_migrate.webhook.policy import Mode

    schema = json.loads((CHART_DIR / "values.schema.json").read_text(encoding="utf-8"))["properties"]
    assert sorted(schema["mode"]["enum"]) == sorted(["", *(m.value for m in Mode)])
    assert sorted(schema["strategy"]["enum"]) == sorted(["", *(s.value for s in Strategy)])
