"""Real TLS server, real clients, Kubernetes-style rotation of the Secret volume."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from certs_support import HandshakeLoop, TLSServer, client_context, fetch_serial, running_server
from polling import wait_until
from secret_volume import SecretVolume

from dra_migrate.certs import generate
from dra_migrate.certs.reload import ReloadingTLSContext

# Short so the tests are fast; production uses the 1 s default.
CHECK_INTERVAL = 0.02


@dataclass
class Setup:
    ca: generate.CertifiedKey
    ca_file: Path
    volume: SecretVolume
    reloader: ReloadingTLSContext
    server: TLSServer
    client: ssl.SSLContext

    def new_leaf(self) -> generate.CertifiedKey:
        return generate.issue_serving_cert(
            self.ca, service="wh", namespace="ns", extra_dns=["localhost"], ip_addresses=["127.0.0.1"]
        )

    def served_serial(self, server_hostname: str = "localhost") -> int:
        return fetch_serial(self.server.port, self.client, server_hostname)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    ca = generate.create_ca()
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(ca.cert_pem())
    volume = SecretVolume(tmp_path / "secret")
    first = generate.issue_serving_cert(
        ca, service="wh", namespace="ns", extra_dns=["localhost"], ip_addresses=["127.0.0.1"]
    )
    volume.publish_pair(first)
    reloader = ReloadingTLSContext(volume.path("tls.crt"), volume.path("tls.key"), check_interval=CHECK_INTERVAL)
    with running_server(reloader) as server:
        yield Setup(ca, ca_file, volume, reloader, server, client_context(ca_file))


def rotate_and_wait(setup: Setup, leaf: generate.CertifiedKey, server_hostname: str = "localhost") -> None:
    setup.volume.publish_pair(leaf)
    serial = leaf.cert.serial_number
    wait_until(lambda: setup.served_serial(server_hostname) == serial, what=f"serial {serial:x} served")


def test_new_connections_get_the_rotated_certificate(setup: Setup) -> None:
    assert setup.reloader.certificate is not None
    assert setup.served_serial() == setup.reloader.certificate.serial
    for server_hostname in ("localhost", "127.0.0.1"):  # with SNI, and without (IP address)
        leaf = setup.new_leaf()
        rotate_and_wait(setup, leaf, server_hostname)
        assert setup.reloader.certificate is not None
        assert setup.reloader.certificate.serial == leaf.cert.serial_number
    assert setup.server.handshake_errors == []


def test_no_failed_handshakes_during_rotations(setup: Setup) -> None:
    leaves = [setup.new_leaf() for _ in range(5)]
    burst = [setup.new_leaf() for _ in range(20)]
    with HandshakeLoop(setup.server.port, setup.client) as loop:
        for leaf in leaves:
            setup.volume.publish_pair(leaf)
            wait_until(partial(loop.seen, leaf.cert.serial_number), what="the loop sees the new serial")
        # Back-to-back updates, so reloads race with the next swap of `..data`.
        for leaf in burst:
            setup.volume.publish_pair(leaf)
        wait_until(partial(loop.seen, burst[-1].cert.serial_number), what="the loop sees the last serial")
    assert loop.failures == []
    assert len(loop.serials) > len(leaves)
    assert setup.server.handshake_errors == []


def test_mismatched_pair_keeps_serving_old_cert_then_recovers(setup: Setup) -> None:
    good = setup.new_leaf()
    rotate_and_wait(setup, good)
    next_leaf = setup.new_leaf()
    with HandshakeLoop(setup.server.port, setup.client, threads=2) as loop:
        # Half-rotated: new certificate with the old key.
        setup.volume.publish_pair(next_leaf, key_from=good)
        wait_until(
            lambda: setup.served_serial() > 0 and setup.reloader.last_error is not None, what="mismatch reported"
        )
        assert "does not match" in (setup.reloader.last_error or "")
        assert setup.served_serial() == good.cert.serial_number
        assert setup.reloader.certificate is not None
        assert setup.reloader.certificate.serial == good.cert.serial_number

        setup.volume.publish_pair(next_leaf)
        wait_until(lambda: setup.served_serial() == next_leaf.cert.serial_number, what="fixed pair served")
        assert setup.reloader.last_error is None
    assert loop.failures == []
    assert next_leaf.cert.serial_number in loop.serials
    assert setup.server.handshake_errors == []


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_tls_1_1_client_is_refused(setup: Setup) -> None:
    legacy = client_context(setup.ca_file, min_version=ssl.TLSVersion.TLSv1_1, max_version=ssl.TLSVersion.TLSv1_1)
    # OpenSSL 3 refuses TLS 1.1 on the client side too unless the security level is 0;
    # lower it so the refusal we observe is the server's.
    legacy.set_ciphers("DEFAULT:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError) as refused:
        fetch_serial(setup.server.port, legacy)
    assert "PROTOCOL_VERSION" in str(refused.value).upper(), "the server sent a protocol_version alert"
    wait_until(
        lambda: any("UNSUPPORTED_PROTOCOL" in str(e) for e in setup.server.handshake_errors),
        what="server-side refusal",
    )

    tls12 = client_context(setup.ca_file, max_version=ssl.TLSVersion.TLSv1_2)
    assert setup.reloader.certificate is not None
    assert fetch_serial(setup.server.port, tls12) == setup.reloader.certificate.serial
