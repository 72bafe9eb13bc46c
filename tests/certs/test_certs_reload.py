"""ReloadingTLSContext without a network: detection, validation, interval."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest
from secret_volume import SecretVolume

from dra_migrate.certs import generate
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
