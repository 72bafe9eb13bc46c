"""ReloadingTLSContext without a network: detection, validation, interval."""

from __future__ import annotations

import contextlib
import logging
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from secret_volume import SecretVolume

from dra_migrate.certs import generate, reload
from dra_migrate.certs.reload import ReloadingTLSContext, TLSLoadError


@pytest.fixture
def ca() -> generate.CertifiedKey:
    return generate.create_ca()


def leaf(ca: generate.CertifiedKey) -> generate.CertifiedKey:
    return generate.issue_serving_cert(ca, service="wh", namespace="ns", extra_dns=["localhost"])


@pytest.fixture
def volume(tmp_path: Path) -> SecretVolume:
    return SecretVolume(tmp_path / "secret")


def reloader_for(volume: SecretVolume, **kwargs: object) -> ReloadingTLSContext:
    return ReloadingTLSContext(volume.path("tls.crt"), volume.path("tls.key"), **kwargs)  # type: ignore[arg-type]


class FakeConnection:
    """Stands in for the SSLSocket the SNI callback receives."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context


def client_hello(reloader: ReloadingTLSContext) -> tuple[int | None, ssl.SSLContext]:
    conn = FakeConnection(reloader.context)
    callback = reloader.context.sni_callback
    assert callback is not None
    result = callback(conn, None, reloader.context)  # type: ignore[arg-type]
    return result, conn.context


def test_initial_load(volume: SecretVolume, ca: generate.CertifiedKey) -> None:
    first = leaf(ca)
    volume.publish_pair(first)
    reloader = reloader_for(volume)
    status = reloader.status()
    assert status.loaded and reloader.loaded
    assert status.last_error is None
    assert status.certificate is not None
    assert status.certificate.serial == first.cert.serial_number
    assert status.certificate.not_after == first.cert.not_valid_after_utc
    assert reloader.context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert reloader.context.sni_callback is not None


def test_reload_only_when_changed(volume: SecretVolume, ca: generate.CertifiedKey) -> None:
    volume.publish_pair(leaf(ca))
    reloader = reloader_for(volume)
    assert reloader.reload_if_changed() is False
    second = leaf(ca)
    volume.publish_pair(second)
    assert reloader.reload_if_changed() is True
    assert reloader.certificate is not None
    assert reloader.certificate.serial == second.cert.serial_number
    assert reloader.reload_if_changed() is False
    _, context = client_hello(reloader)
    assert context is not reloader.context, "connections are switched to the new pair"
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_mismatched_pair_keeps_previous(
    volume: SecretVolume, ca: generate.CertifiedKey, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = leaf(ca), leaf(ca)
    volume.publish_pair(first)
    reloader = reloader_for(volume)
    with caplog.at_level(logging.WARNING, logger="dra_migrate.certs.reload"):
        volume.publish_pair(second, key_from=first)
        assert reloader.reload_if_changed() is False
        assert reloader.reload_if_changed() is False  # retried, logged once
    assert reloader.last_error is not None
    assert "does not match" in reloader.last_error
    assert reloader.certificate is not None
    assert reloader.certificate.serial == first.cert.serial_number
    assert len([r for r in caplog.records if "cannot load" in r.getMessage()]) == 1
    result, context = client_hello(reloader)
    assert result is None and context is reloader.context

    volume.publish_pair(second)
    assert reloader.reload_if_changed() is True
    assert reloader.last_error is None
    assert reloader.certificate is not None
    assert reloader.certificate.serial == second.cert.serial_number


def served_serial(context: ssl.SSLContext) -> int:
    """The serial of the certificate a handshake on `context` presents, through memory buffers."""
    client_side = ssl.create_default_context()
    client_side.check_hostname = False
    client_side.verify_mode = ssl.CERT_NONE
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_side.wrap_bio(to_client, to_server, server_hostname="wh")
    server = context.wrap_bio(to_server, to_client, server_side=True)
    done: set[ssl.SSLObject] = set()
    for _ in range(10):
        for side in (client, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
                done.add(side)
        if client in done and (der := client.getpeercert(binary_form=True)) is not None:
            return x509.load_der_x509_certificate(der).serial_number
    raise AssertionError("the handshake did not complete")


def test_an_update_between_resolving_and_reading_a_file_is_read_again(
    volume: SecretVolume, ca: generate.CertifiedKey, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubelet deletes the directory `..data` pointed at right after the swap: a check that
    resolved `tls.key` into it a moment before finds it gone. That is the next pair arriving, read
    again at once, not an error to report."""
    volume.publish_pair(leaf(ca))
    reloader = reloader_for(volume)
    second = leaf(ca)
    real_fingerprint = reload._fingerprint
    swaps: list[Path] = []

    def swap_after_resolving(path: Path) -> tuple[str, int, int, int, int]:
        if path.name == "tls.key" and not swaps:
            resolved = path.resolve(strict=True)
            swaps.append(resolved)
            volume.publish_pair(second)
            return real_fingerprint(resolved)  # gone with its directory
        return real_fingerprint(path)

    monkeypatch.setattr(reload, "_fingerprint", swap_after_resolving)
    with caplog.at_level(logging.WARNING, logger="dra_migrate.certs.reload"):
        assert reloader.reload_if_changed() is True
    assert swaps and not swaps[0].exists()
    assert reloader.last_error is None
    assert not [r for r in caplog.records if "cannot load" in r.getMessage()]
    assert reloader.certificate is not None and reloader.certificate.serial == second.cert.serial_number


def test_an_update_while_a_pair_is_loaded_leaves_info_and_context_of_one_pair(
    volume: SecretVolume, ca: generate.CertifiedKey, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The certificate is read for its info, then with the key into the context: an update in
    between must not leave the info of one certificate beside a context serving the next."""
    volume.publish_pair(leaf(ca))
    reloader = reloader_for(volume)
    second, third = leaf(ca), leaf(ca)
    volume.publish_pair(second)
    real_info = reload._certificate_info
    updated: list[bool] = []

    def update_after_reading(pem: bytes) -> reload.CertificateInfo:
        if not updated:
            updated.append(True)
            volume.publish_pair(third)
        return real_info(pem)

    monkeypatch.setattr(reload, "_certificate_info", update_after_reading)
    with caplog.at_level(logging.WARNING, logger="dra_migrate.certs.reload"):
        assert reloader.reload_if_changed() is True
    assert updated
    assert reloader.last_error is None
    assert not [r for r in caplog.records if "cannot load" in r.getMessage()]
    assert reloader.certificate is not None and reloader.certificate.serial == third.cert.serial_number
    _, context = client_hello(reloader)
    assert served_serial(context) == third.cert.serial_number


def test_plain_directory_rewrite_is_detected(tmp_path: Path, ca: generate.CertifiedKey) -> None:
    # Outside Kubernetes, `certs generate --out` replaces the files in place.
    generate.write_bundle(generate.Bundle(ca, leaf(ca)), tmp_path)
    reloader = ReloadingTLSContext(tmp_path / "tls.crt", tmp_path / "tls.key")
    newer = leaf(ca)
    generate.write_bundle(generate.Bundle(ca, newer), tmp_path)
    assert reloader.reload_if_changed() is True
    assert reloader.certificate is not None
    assert reloader.certificate.serial == newer.cert.serial_number


def test_missing_files(volume: SecretVolume, ca: generate.CertifiedKey) -> None:
    with pytest.raises(TLSLoadError, match="No such file"):
        reloader_for(volume)
    reloader = reloader_for(volume, require_initial=False)
    assert not reloader.loaded
    assert reloader.last_error is not None and "No such file" in reloader.last_error
    result, _ = client_hello(reloader)
    assert result == ssl.ALERT_DESCRIPTION_INTERNAL_ERROR, "no certificate yet: refuse the handshake"
    volume.publish_pair(leaf(ca))
    assert reloader.reload_if_changed() is True
    assert reloader.loaded and reloader.last_error is None


def test_files_checked_at_most_once_per_interval(volume: SecretVolume, ca: generate.CertifiedKey) -> None:
    now = [100.0]
    first, second = leaf(ca), leaf(ca)
    volume.publish_pair(first)
    reloader = reloader_for(volume, check_interval=1.0, clock=lambda: now[0])
    volume.publish_pair(second)
    now[0] += 0.5
    _, context = client_hello(reloader)
    assert context is reloader.context, "not due yet"
    now[0] += 0.5
    _, context = client_hello(reloader)
    assert context is not reloader.context
    assert reloader.certificate is not None
    assert reloader.certificate.serial == second.cert.serial_number


def test_configure_applies_to_every_context_and_cannot_lower_tls(
    volume: SecretVolume, ca: generate.CertifiedKey
) -> None:
    configured: list[ssl.SSLContext] = []

    def configure(context: ssl.SSLContext) -> None:
        context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        configured.append(context)

    volume.publish_pair(leaf(ca))
    reloader = reloader_for(volume, configure=configure)
    volume.publish_pair(leaf(ca))
    reloader.reload_if_changed()
    assert len(configured) == 2
    assert all(c.minimum_version == ssl.TLSVersion.TLSv1_2 for c in configured)
