"""Throwaway PKI for the local control plane: CA, serving certs, client certs, SA key."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=2)
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class CertKeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class CertificateAuthority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    files: CertKeyPair

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class Pki:
    ca: CertificateAuthority
    serving: CertKeyPair
    admin: CertKeyPair
    service_account_key: Path


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(directory: Path, stem: str, cert: x509.Certificate, key: PrivateKey) -> CertKeyPair:
    pair = CertKeyPair(cert=directory / f"{stem}.crt", key=directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(_key_pem(key))
    pair.key.chmod(0o600)
    return pair


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    # Backdate a little so clock skew between processes never makes a cert "not yet valid".
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def create_ca(directory: Path, common_name: str = "dra-migrate-e2e-ca") -> CertificateAuthority:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(cert=cert, key=key, files=_write(directory, "ca", cert, key))


def issue_cert(
    ca: CertificateAuthority,
    directory: Path,
    stem: str,
    common_name: str,
    *,
    organization: str | None = None,
    ips: tuple[str, ...] = (),
    dns_names: tuple[str, ...] = (),
    client: bool = False,
) -> CertKeyPair:
    """Issue a leaf cert signed by `ca`; serving certs need SANs (Go ignores the CN)."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        _builder(_name(common_name, organization), ca.cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    sans += [x509.DNSName(name) for name in dns_names]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return _write(directory, stem, builder.sign(ca.key, hashes.SHA256()), key)


def create_pki(directory: Path) -> Pki:
    """Everything kube-apiserver and its clients need to talk over loopback TLS."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = create_ca(directory)
    serving = issue_cert(
        ca,
        directory,
        "apiserver",
        "kube-apiserver",
        ips=("127.0.0.1", "10.0.0.1"),
        dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
    )
    admin = issue_cert(ca, directory, "admin", "admin", organization="system:masters", client=True)
    sa_key = directory / "sa.key"
    sa_key.write_bytes(_key_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    sa_key.chmod(0o600)
    return Pki(ca=ca, serving=serving, admin=admin, service_account_key=sa_key)
