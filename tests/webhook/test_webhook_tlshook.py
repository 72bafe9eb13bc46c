"""The gunicorn `ssl_context` hook of `serve`: one reloading context per worker, built on first use."""

from __future__ import annotations

import ssl
from pathlib import Path
from types import SimpleNamespace

import pytest
from secret_volume import SecretVolume

from dra_migrate.certs import generate
from dra_migrate.webhook.tlshook import GunicornSSLContextHook, gunicorn_ssl_context_hook


@pytest.fixture
def ca() -> generate.CertifiedKey:
    return generate.create_ca()


@pytest.fixture
def volume(tmp_path: Path) -> SecretVolume:
    return SecretVolume(tmp_path / "secret")


def leaf(ca: generate.CertifiedKey) -> generate.CertifiedKey:
    return generate.issue_serving_cert(ca, service="wh", namespace="ns", extra_dns=["localhost"])


def test_gunicorn_hook_passes_gunicorn_validation(volume: SecretVolume, ca: generate.CertifiedKey) -> None:
    from gunicorn.config import Config

    volume.publish_pair(leaf(ca))
    hook = gunicorn_ssl_context_hook(volume.path("tls.crt"), volume.path("tls.key"))
    config = Config()
    config.set("ssl_context", hook)  # gunicorn checks the callable's arity here
    config.set("certfile", str(volume.path("tls.crt")))
    config.set("keyfile", str(volume.path("tls.key")))

    def default_factory() -> ssl.SSLContext:
        raise AssertionError("the hook must not re-read the files on every connection")

    assert hook.reloader is None, "built lazily, in the worker process"
    first = config.ssl_context(config, default_factory)
    assert config.ssl_context(config, default_factory) is first
    assert hook.reloader is not None and hook.reloader.context is first
    assert first.minimum_version == ssl.TLSVersion.TLSv1_2


def test_gunicorn_hook_defaults_to_gunicorn_settings(volume: SecretVolume, ca: generate.CertifiedKey) -> None:
    volume.publish_pair(leaf(ca))
    config = SimpleNamespace(
        certfile=str(volume.path("tls.crt")),
        keyfile=str(volume.path("tls.key")),
        ca_certs=None,
        cert_reqs=ssl.CERT_NONE,
        ciphers="ECDHE+AESGCM",
    )
    hook = gunicorn_ssl_context_hook()
    assert isinstance(hook, GunicornSSLContextHook)
    context = hook(config, ssl.create_default_context)
    assert hook.reloader is not None and hook.reloader.loaded
    tls12_ciphers = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12_ciphers and all("ECDHE" in name and "GCM" in name for name in tls12_ciphers)


def test_gunicorn_hook_with_broken_files_refuses_handshakes_instead_of_raising(tmp_path: Path) -> None:
    hook = gunicorn_ssl_context_hook(tmp_path / "tls.crt", tmp_path / "tls.key")
    context = hook(SimpleNamespace(), ssl.create_default_context)
    assert hook.reloader is not None
    assert not hook.reloader.loaded
    assert context.sni_callback is not None
