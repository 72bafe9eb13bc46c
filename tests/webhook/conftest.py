"""Fixtures for the webhook tests: certificates, a fake Kubernetes API and real server processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakekube import FakeKubeServer
from webhook_support import ServerProcess, StartServer

from dra_migrate.certs.generate import create_bundle, write_bundle


@pytest.fixture(scope="session")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CA + serving certificate for 127.0.0.1 / localhost, written by certs/ (ca.crt, tls.crt, tls.key)."""
    directory = tmp_path_factory.mktemp("tls")
    bundle = create_bundle(
        service="dra-migrate", namespace="dra-migrate", extra_dns=["localhost"], ip_addresses=["127.0.0.1"]
    )
    write_bundle(bundle, directory)
    return directory


@pytest.fixture
def fake_kube(tmp_path: Path) -> Iterator[FakeKubeServer]:
    with FakeKubeServer() as server:
        yield server


@pytest.fixture
def kubeconfig(fake_kube: FakeKubeServer, tmp_path: Path) -> Path:
    """A kubeconfig pointing at `fake_kube`."""
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def start_server(tls_dir: Path, tmp_path: Path) -> Iterator[StartServer]:
    """Start `serve` with keyword arguments of ServerProcess; waits for /readyz; stops at teardown."""
    started: list[ServerProcess] = []

    def start(**kwargs: Any) -> ServerProcess:
        kwargs.setdefault("tls_dir", tls_dir)
        server = ServerProcess(work_dir=tmp_path, **kwargs)
        started.append(server)
        return server.wait_ready()

    yield start
    for server in started:
        server.stop()
