"""Tools the deploy/ tests share: kubectl and helm lookup, rendering, throwaway certificates.

kubectl is found via $KUBECTL, then PATH, then the e2e cache
(${DRA_MIGRATE_CACHE:-~/.cache/dra-migrate}/k8s-v1.34.*/kubectl); helm via $HELM, then PATH, then
the cache of tests/deploy/build-helm.sh (helm-v*/helm). A missing tool skips the tests that need
it, except with CI=true, where it fails them.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Obj = dict[str, Any]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO_ROOT / "deploy"
CHART_DIR = DEPLOY_DIR / "helm" / "dra-migrate"
BUILD_HELM = REPO_ROOT / "tests" / "deploy" / "build-helm.sh"


# --------------------------------------------------------------------------- tools


def cache_root() -> Path:
    configured = os.environ.get("DRA_MIGRATE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "dra-migrate"


def _version_key(path: Path) -> tuple[int, ...]:
    # .../k8s-v1.34.2/kubectl -> (1, 34, 2)
    return tuple(int(n) for n in re.findall(r"\d+", path.parent.name))


def _find(variable: str, name: str, cached: str) -> str | None:
    """$VARIABLE, then PATH, then the newest matching cached build."""
    configured = os.environ.get(variable)
    if configured:
        found = shutil.which(configured)
        if found is None:
            pytest.fail(f"{variable}={configured!r} is not an executable file")
        return found
    on_path = shutil.which(name)
    if on_path:
        return on_path
    builds = [p for p in cache_root().glob(cached) if os.access(p, os.X_OK)]
    return str(max(builds, key=_version_key)) if builds else None


def find_kubectl() -> str | None:
    return _find("KUBECTL", "kubectl", "k8s-v1.34.*/kubectl")


def find_helm() -> str | None:
    return _find("HELM", "helm", "helm-v*/helm")


def missing_tool(message: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def kustomize_build(kubectl: str, directory: Path) -> list[Obj]:
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    return objects(result.stdout, f"kubectl kustomize {directory}")


def objects(text: str, what: str) -> list[Obj]:
    docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    assert all(isinstance(doc, dict) for doc in docs), f"{what} holds a non-object document"
    return docs


# --------------------------------------------------------------------------- helm


@dataclass(frozen=True)
class Helm:
    binary: str

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=timeout, check=False)

    def render(
        self,
        *,
        release: str = "dra-migrate",
        namespace: str = "dra-migrate",
        values: Mapping[str, Any] | None = None,
        set_files: Mapping[str, Path] | None = None,
        kube_version: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`helm template RELEASE deploy/helm/dra-migrate`, values given as a values file (-f)."""
        with tempfile.TemporaryDirectory(prefix="dra-migrate-values-") as tmp:
            args = [release, str(CHART_DIR), "--namespace", namespace]
            if values:
                values_file = Path(tmp) / "values.yaml"
                values_file.write_text(yaml.safe_dump(dict(values)), encoding="utf-8")
                args += ["--values", str(values_file)]
            for key, path in (set_files or {}).items():
                args += ["--set-file", f"{key}={path}"]
            if kube_version:
                args += ["--kube-version", kube_version]
            return self.run("template", *args)

    def template(self, **kwargs: Any) -> list[Obj]:
        """The rendered objects; fails the test with helm's message."""
        result = self.render(**kwargs)
        assert result.returncode == 0, f"helm template failed:\n{result.stderr}"
        return objects(result.stdout, "helm template")


# --------------------------------------------------------------------------- throwaway certificates


@dataclass(frozen=True)
class ThrowawayCerts:
    ca_pem: bytes
    tls_crt_pem: bytes


def write_throwaway_certs(out: Path, service: str, namespace: str) -> ThrowawayCerts:
    """What `dra-migrate certs generate` writes (ca.crt ca.key tls.crt tls.key), made here
    with cryptography so the tests do not depend on the project's own cert code."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dra-migrate test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    dns_names = [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]
    leaf_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[2])]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    certs = ThrowawayCerts(
        ca_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        tls_crt_pem=leaf_cert.public_bytes(serialization.Encoding.PEM),
    )
    out.mkdir(parents=True)
    (out / "ca.crt").write_bytes(certs.ca_pem)
    (out / "ca.key").write_bytes(key_pem(ca_key))
    (out / "tls.crt").write_bytes(certs.tls_crt_pem)
    (out / "tls.key").write_bytes(key_pem(leaf_key))
    return certs


# --------------------------------------------------------------------------- objects


def ref(obj: Obj) -> str:
    return f"{obj['apiVersion']} {obj['kind']}/{obj['metadata']['name']}"


def of_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in of_kind(objs, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected exactly one {kind} {name or ''}, found {[ref(o) for o in found]}"
    return found[0]
