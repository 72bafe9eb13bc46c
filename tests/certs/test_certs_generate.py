from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
from pathlib import Path
from typing import TypeVar

import pytest
from certs_support import file_mode
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store

from dra_migrate.certs import generate

_E = TypeVar("_E", bound=x509.ExtensionType)
NOW = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
REQUIRED_DNS = [
    "dra-webhook",
    "dra-webhook.dra-system",
    "dra-webhook.dra-system.svc",
    "dra-webhook.dra-system.svc.cluster.local",
]


def _bundle(**kwargs: object) -> generate.Bundle:
    args: dict[str, object] = {"service": "dra-webhook", "namespace": "dra-system", "now": NOW}
    args.update(kwargs)
    return generate.create_bundle(**args)  # type: ignore[arg-type]


def _ext(cert: x509.Certificate, kind: type[_E]) -> x509.Extension[_E]:
    return cert.extensions.get_extension_for_class(kind)


def _verify(bundle: generate.Bundle, subject: x509.verification.Subject) -> None:
    verifier = PolicyBuilder().store(Store([bundle.ca.cert])).time(NOW).build_server_verifier(subject)
    chain = verifier.verify(bundle.leaf.cert, [])
    assert chain[-1] == bundle.ca.cert


def test_chain_verifies_for_every_san() -> None:
    bundle = _bundle(extra_dns=["localhost"], ip_addresses=["127.0.0.1", "::1"])
    for name in [*REQUIRED_DNS, "localhost"]:
        _verify(bundle, x509.DNSName(name))
    for ip in ("127.0.0.1", "::1"):
        _verify(bundle, x509.IPAddress(ipaddress.ip_address(ip)))


def test_chain_does_not_verify_for_other_names_or_other_cas() -> None:
    bundle = _bundle()
    with pytest.raises(x509.verification.VerificationError):
        _verify(bundle, x509.DNSName("dra-webhook.other-ns.svc"))
    stranger = _bundle()
    with pytest.raises(x509.verification.VerificationError):
        _verify(generate.Bundle(stranger.ca, bundle.leaf), x509.DNSName(REQUIRED_DNS[2]))


def test_sans_are_exactly_the_service_names_plus_extras() -> None:
    plain = _bundle()
    san = _ext(plain.leaf.cert, x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == REQUIRED_DNS
    assert san.get_values_for_type(x509.IPAddress) == []

    extra = _bundle(extra_dns=["localhost", "localhost", REQUIRED_DNS[0]], ip_addresses=["127.0.0.1"])
    san = _ext(extra.leaf.cert, x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [*REQUIRED_DNS, "localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_default_keys_are_ecdsa_p256() -> None:
    bundle = _bundle()
    for part in (bundle.ca, bundle.leaf):
        assert isinstance(part.key, ec.EllipticCurvePrivateKey)
        assert isinstance(part.key.curve, ec.SECP256R1)
        assert part.cert.signature_algorithm_oid == x509.SignatureAlgorithmOID.ECDSA_WITH_SHA256


def test_ca_extensions() -> None:
    ca = _bundle().ca.cert
    basic = _ext(ca, x509.BasicConstraints)
    assert basic.critical and basic.value.ca
    usage = _ext(ca, x509.KeyUsage)
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign
    assert not usage.value.digital_signature
    ski = _ext(ca, x509.SubjectKeyIdentifier).value
    assert ski == x509.SubjectKeyIdentifier.from_public_key(ca.public_key())
    assert ca.issuer == ca.subject


def test_leaf_extensions_ecdsa() -> None:
    bundle = _bundle()
    leaf = bundle.leaf.cert
    assert not _ext(leaf, x509.BasicConstraints).value.ca
    usage = _ext(leaf, x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_encipherment and not usage.key_cert_sign
    assert list(_ext(leaf, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]
    aki = _ext(leaf, x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == _ext(bundle.ca.cert, x509.SubjectKeyIdentifier).value.digest
    assert leaf.issuer == bundle.ca.cert.subject


@pytest.mark.parametrize(("key_type", "bits"), [(generate.KeyType.RSA_2048, 2048), (generate.KeyType.RSA_3072, 3072)])
def test_rsa_keys_add_key_encipherment(key_type: generate.KeyType, bits: int) -> None:
    bundle = _bundle(key_type=key_type)
    for part in (bundle.ca, bundle.leaf):
        assert isinstance(part.key, rsa.RSAPrivateKey)
        assert part.key.key_size == bits
    usage = _ext(bundle.leaf.cert, x509.KeyUsage).value
    assert usage.digital_signature and usage.key_encipherment
    _verify(bundle, x509.DNSName(REQUIRED_DNS[3]))


def test_validity_defaults_and_backdating() -> None:
    bundle = _bundle()
    assert bundle.ca.cert.not_valid_before_utc == NOW - generate.CLOCK_SKEW
    assert bundle.ca.cert.not_valid_after_utc == NOW + dt.timedelta(days=3650)
    assert bundle.leaf.cert.not_valid_before_utc == NOW - generate.CLOCK_SKEW
    assert bundle.leaf.cert.not_valid_after_utc == NOW + dt.timedelta(days=365)
    assert dt.timedelta(minutes=1) <= generate.CLOCK_SKEW


def test_custom_validity_is_capped_by_the_ca() -> None:
    short = _bundle(leaf_validity=dt.timedelta(days=7))
    assert short.leaf.cert.not_valid_after_utc == NOW + dt.timedelta(days=7)
    ca = generate.create_ca(validity=dt.timedelta(days=30), now=NOW)
    capped = _bundle(ca=ca, leaf_validity=dt.timedelta(days=365))
    assert capped.leaf.cert.not_valid_after_utc == ca.cert.not_valid_after_utc


def test_existing_ca_signs_new_leaf_with_same_ca_bundle() -> None:
    first = _bundle()
    ca = generate.load_ca(first.ca.cert_pem(), first.ca.key_pem(), now=NOW)
    second = _bundle(ca=ca)
    assert second.ca_bundle == first.ca_bundle
    assert second.leaf.cert.serial_number != first.leaf.cert.serial_number
    _verify(second, x509.DNSName(REQUIRED_DNS[2]))


def test_ca_bundle_is_base64_of_ca_pem() -> None:
    bundle = _bundle()
    assert "\n" not in bundle.ca_bundle
    assert base64.b64decode(bundle.ca_bundle, validate=True) == bundle.ca.cert_pem()


@pytest.mark.parametrize(
    ("cert", "key", "message"),
    [
        ("other", "own", "does not match"),
        ("garbage", "own", "not a PEM certificate"),
        ("own", "garbage", "not an unencrypted PEM private key"),
        ("leaf", "leafkey", "not a CA"),
    ],
)
def test_load_ca_rejects_bad_input(cert: str, key: str, message: str) -> None:
    bundle, other = _bundle(), _bundle()
    pems = {
        "own": bundle.ca.cert_pem(),
        "other": other.ca.cert_pem(),
        "leaf": bundle.leaf.cert_pem(),
        "garbage": b"not pem",
    }
    keys = {"own": bundle.ca.key_pem(), "leafkey": bundle.leaf.key_pem(), "garbage": b"junk"}
    with pytest.raises(generate.CertificateError, match=message):
        generate.load_ca(pems[cert], keys[key], now=NOW)


def test_load_ca_rejects_expired_ca() -> None:
    ca = generate.create_ca(validity=dt.timedelta(days=1), now=NOW)
    with pytest.raises(generate.CertificateError, match="expired"):
        generate.load_ca(ca.cert_pem(), ca.key_pem(), now=NOW + dt.timedelta(days=2))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"service": "Bad_Name"},
        {"namespace": "-ns"},
        {"extra_dns": ["bad name"]},
        {"ip_addresses": ["300.1.1.1"]},
        {"leaf_validity": dt.timedelta(0)},
    ],
)
def test_invalid_input_raises_certificate_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(generate.CertificateError):
        _bundle(**kwargs)


def test_write_bundle_files_and_modes(tmp_path: Path) -> None:
    bundle = _bundle()
    out = tmp_path / "nested" / "out"
    written = generate.write_bundle(bundle, out)
    assert sorted(p.name for p in written) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert file_mode(out / "ca.key") == 0o600
    assert file_mode(out / "tls.key") == 0o600
    assert (out / "tls.crt").read_bytes() == bundle.leaf.cert_pem()
    assert (out / "ca.crt").read_bytes() == bundle.ca.cert_pem()
    assert (out / "tls.key").read_bytes() == bundle.leaf.key_pem()

    generate.write_bundle(_bundle(ca=bundle.ca), out, include_ca_key=False)
    assert (out / "ca.key").read_bytes() == bundle.ca.key_pem()


def test_keys_are_created_0600_never_chmodded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: dict[str, int] = {}
    real_open = os.open

    def recording_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
        opened[Path(path).name] = mode
        assert flags & os.O_EXCL, "temp files must be created fresh"
        return real_open(path, flags, mode)

    def no_chmod(*args: object, **kwargs: object) -> None:
        raise AssertionError("files must be created with their final mode")

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "chmod", no_chmod)
    monkeypatch.setattr(os, "fchmod", no_chmod)
    generate.write_bundle(_bundle(), tmp_path)
    modes_by_file = {name.rsplit(".", 2)[0].lstrip("."): mode for name, mode in opened.items()}
    assert modes_by_file == {"ca.crt": 0o644, "ca.key": 0o600, "tls.key": 0o600, "tls.crt": 0o644}


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _bundle()
    generate.write_bundle(old, tmp_path)

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        generate.write_bundle(_bundle(), tmp_path)
    assert (tmp_path / "ca.crt").read_bytes() == old.ca.cert_pem()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
