"""Certificates outside their validity window, failed reloads reported, TLS 1.2 without CBC suites."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
from pathlib import Path

import pytest
from cert_chain import intermediate
from certs_support import client_context, fetch_serial, running_server
from secret_volume import SecretVolume

from dra_migrate.certs import generate
from dra_migrate.certs.reload import CertificateInfo, ReloadingTLSContext

DAY = dt.timedelta(days=1)


@pytest.fixture
def ca() -> generate.CertifiedKey:
    return generate.create_ca(now=dt.datetime.now(dt.UTC) - 1000 * DAY)


def leaf(ca: generate.CertifiedKey, start: dt.datetime | None = None, days: int = 365) -> generate.CertifiedKey:
    return generate.issue_serving_cert(
        ca, service="wh", namespace="ns", extra_dns=["localhost"], now=start, validity=days * DAY
    )


def expired(ca: generate.CertifiedKey) -> generate.CertifiedKey:
    return leaf(ca, dt.datetime.now(dt.UTC) - 400 * DAY, days=365)


class Events:
    def __init__(self) -> None:
        self.loaded: list[CertificateInfo] = []
        self.errors: list[str] = []


@pytest.fixture
def events() -> Events:
    return Events()


class WallClock:
    def __init__(self) -> None:
        self.now = dt.datetime.now(dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


def reloader_for(volume: SecretVolume, events: Events, wall: WallClock | None = None) -> ReloadingTLSContext:
    return ReloadingTLSContext(
        volume.path("tls.crt"),
        volume.path("tls.key"),
        check_interval=0,
        wall_clock=wall or WallClock(),
        on_loaded=events.loaded.append,
        on_error=events.errors.append,
    )


def after_an_expired_rotation(
    tmp_path: Path, ca: generate.CertifiedKey, events: Events
) -> tuple[ReloadingTLSContext, generate.CertifiedKey, SecretVolume]:
    """A reloader serving a valid pair whose files were then replaced by an expired one (not checked yet)."""
    volume = SecretVolume(tmp_path / "secret")
    good = leaf(ca)
    volume.publish_pair(good)
    reloader = reloader_for(volume, events)
    volume.publish_pair(expired(ca))
    return reloader, good, volume


def test_expired_rotation_does_not_replace_a_valid_certificate(
    tmp_path: Path, ca: generate.CertifiedKey, events: Events
) -> None:
    reloader, good, volume = after_an_expired_rotation(tmp_path, ca, events)
    for _ in range(3):  # checked again and again while the files stay so: reported once
        assert reloader.reload_if_changed() is False
    assert reloader.certificate is not None and reloader.certificate.serial == good.cert.serial_number
    assert reloader.certificate_problem() is None
    assert len(events.errors) == 1 and "expired at" in events.errors[0]
    assert [info.serial for info in events.loaded] == [good.cert.serial_number]
    # The next good rotation is taken as usual.
    renewed = leaf(ca)
    volume.publish_pair(renewed)
    assert reloader.reload_if_changed() is True
    assert reloader.certificate is not None and reloader.certificate.serial == renewed.cert.serial_number


def test_not_yet_valid_rotation_is_taken_when_its_time_comes(
    tmp_path: Path, ca: generate.CertifiedKey, events: Events
) -> None:
    volume = SecretVolume(tmp_path / "secret")
    volume.publish_pair(leaf(ca))
    wall = WallClock()
    reloader = reloader_for(volume, events, wall)
    early = leaf(ca, wall.now + DAY)
    volume.publish_pair(early)
    assert reloader.reload_if_changed() is False
    assert "not valid before" in events.errors[0]
    wall.now += 2 * DAY
    assert reloader.reload_if_changed() is True
    assert reloader.certificate is not None and reloader.certificate.serial == early.cert.serial_number


def test_an_expired_certificate_is_served_when_nothing_better_exists_but_reported(
    tmp_path: Path, ca: generate.CertifiedKey, events: Events
) -> None:
    volume = SecretVolume(tmp_path / "secret")
    old = expired(ca)
    volume.publish_pair(old)
    reloader = reloader_for(volume, events)
    problem = reloader.certificate_problem()
    assert problem is not None and "expired at" in problem
    assert events.loaded[0].not_after == old.cert.not_valid_after_utc


def test_the_chain_sets_the_validity_window(tmp_path: Path, ca: generate.CertifiedKey, events: Events) -> None:
    """The earliest notAfter and the latest notBefore of the leaf and the intermediates it is
    verified through: a valid leaf sent with an expired or not yet valid intermediate is refused by
    clients, so it is a problem, named. Certificates off that path (an extra root, another CA's)
    do not count."""
    volume = SecretVolume(tmp_path / "secret")
    now = dt.datetime.now(dt.UTC)
    current = intermediate(ca, "issuing CA", not_before=now - DAY, not_after=now + 400 * DAY)
    served = leaf(current)
    for validity, text in (
        ((now - 400 * DAY, now - DAY), "CN=issuing CA expired at"),
        ((now + DAY, now + 9 * DAY), "CN=issuing CA is not valid before"),
    ):
        sent = intermediate(ca, "issuing CA", not_before=validity[0], not_after=validity[1], key=current.key)
        volume.publish({"tls.crt": served.cert_pem() + sent.cert_pem(), "tls.key": served.key_pem()})
        problem = reloader_for(volume, events).certificate_problem()
        assert problem is not None and f"certificate serial={served.cert.serial_number:x}" in problem, problem
        assert f"the chain certificate {text}" in problem, problem
    unrelated = generate.create_ca(common_name="unrelated", now=now - 400 * DAY, validity=DAY)
    volume.publish(
        {
            "tls.crt": served.cert_pem() + current.cert_pem() + ca.cert_pem() + unrelated.cert_pem(),
            "tls.key": served.key_pem(),
        }
    )
    info = reloader_for(volume, events).certificate
    assert info is not None and info.not_after == served.cert.not_valid_after_utc and info.expires_first == ""
    assert reloader_for(volume, events).certificate_problem() is None


def test_a_forked_copy_serves_the_same_pair_and_reports_nothing(
    tmp_path: Path, ca: generate.CertifiedKey, events: Events
) -> None:
    reloader, good, volume = after_an_expired_rotation(tmp_path, ca, events)
    reloader.reload_if_changed()  # refused and reported by the process that forks
    reloader.forked()
    reloader.reload_if_changed()
    volume.publish_pair(leaf(ca))
    reloader.reload_if_changed()  # taken, silently
    assert len(events.errors) == 1 and len(events.loaded) == 1
    assert reloader.certificate is not None and reloader.certificate.serial != good.cert.serial_number


def test_broken_files_count_as_failed_reloads(tmp_path: Path, ca: generate.CertifiedKey, events: Events) -> None:
    volume = SecretVolume(tmp_path / "secret")
    first, second = leaf(ca), leaf(ca)
    volume.publish_pair(first)
    reloader = reloader_for(volume, events)
    volume.publish_pair(second, key_from=first)  # key of another certificate
    reloader.reload_if_changed()
    reloader.reload_if_changed()
    assert len(events.errors) == 1 and "does not match" in events.errors[0]


def handshake(port: int, context: ssl.SSLContext) -> str | None:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        cipher = tls.cipher()
        return cipher[0] if cipher else None


def test_tls12_offers_no_cbc_suites(tmp_path: Path, ca: generate.CertifiedKey, events: Events) -> None:
    volume = SecretVolume(tmp_path / "secret")
    volume.publish_pair(leaf(ca))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem())
    reloader = reloader_for(volume, events)
    with running_server(reloader) as server:
        tls12 = client_context(tmp_path / "ca.crt", max_version=ssl.TLSVersion.TLSv1_2)
        assert fetch_serial(server.port, tls12) > 0
        chosen = handshake(server.port, tls12)
        assert chosen is not None and ("GCM" in chosen or "CHACHA20" in chosen), chosen
        for cbc in ("ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES128-SHA"):
            only_cbc = client_context(tmp_path / "ca.crt", max_version=ssl.TLSVersion.TLSv1_2)
            only_cbc.set_ciphers(cbc)
            with pytest.raises(ssl.SSLError):
                handshake(server.port, only_cbc)
