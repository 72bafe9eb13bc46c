"""Session fixtures for the e2e suite: a real control plane plus a fake GPU cluster.

Fixtures (see README-style notes in controlplane.py / cluster_fixtures.py):
  control_plane    session  ControlPlane (started; .kubeconfig, .server, .log_dir, .kubectl())
  kubeconfig_path  session  Path of an admin kubeconfig for the cluster
  k8s_api_client   session  kubernetes.client.ApiClient built from that kubeconfig
  kube             session  Kube: dict-based create/get/list/patch/delete for any kind
  fake_cluster     session  FakeCluster: DeviceClasses + default fake nodes and ResourceSlices
  namespace        function a fresh namespace, deleted (pods force-deleted) afterwards
  webhook          module   LocalWebhook: `dra-migrate serve` (gunicorn, TLS) registered through the
                            MutatingWebhookConfiguration of deploy/ (see webhook_process.py)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s_client

from .cluster_fixtures import FakeCluster, Kube, build_cluster, create_namespace, delete_namespace
from .controlplane import BUILD_SCRIPT, ControlPlane, find_binaries, missing_binaries, remove_workdir
from .webhook_process import LocalWebhook

E2E_DIR = Path(__file__).resolve().parent
E2E_FAILED = pytest.StashKey[bool]()
CONTROL_PLANE = pytest.StashKey[ControlPlane]()


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def _keep_workdir() -> bool:
    return os.environ.get("DRA_MIGRATE_E2E_KEEP", "").strip().lower() in ("true", "1")


# --------------------------------------------------------------------------- hooks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything under tests/e2e needs the real control plane.
    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and item.get_closest_marker("e2e") is not None:
        item.config.stash[E2E_FAILED] = True
        if (plane := item.config.stash.get(CONTROL_PLANE, None)) is not None:
            report.sections.append(("control-plane logs", f"kept in {plane.log_dir}"))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    stash = terminalreporter.config.stash
    plane = stash.get(CONTROL_PLANE, None)
    if plane is not None and stash.get(E2E_FAILED, False):
        terminalreporter.write_line(f"e2e control-plane logs kept in {plane.log_dir}", yellow=True)


# --------------------------------------------------------------------------- fixtures


def _require_binaries() -> dict[str, Path]:
    binaries = find_binaries()
    if binaries is not None:
        return binaries
    message = (
        f"e2e control-plane binaries missing ({', '.join(missing_binaries())}); run {BUILD_SCRIPT} "
        "(or set TEST_ASSET_<NAME> / KUBEBUILDER_ASSETS)"
    )
    if _in_ci():
        pytest.fail(message + " [CI=true: missing binaries are an error, not a skip]", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    binaries = _require_binaries()
    workdir = Path(tempfile.mkdtemp(prefix="dra-migrate-e2e-"))
    plane = ControlPlane(binaries, workdir)
    try:
        plane.start()
    except Exception as err:
        # Keep the workdir: the logs are the only way to see why a component did not come up.
        pytest.fail(f"control plane failed to start (logs kept in {plane.log_dir}): {err}", pytrace=False)
    request.config.stash[CONTROL_PLANE] = plane
    try:
        yield plane
    finally:
        plane.stop()
        if not request.config.stash.get(E2E_FAILED, False) and not _keep_workdir():
            remove_workdir(workdir)


@pytest.fixture(scope="session")
def kubeconfig_path(control_plane: ControlPlane) -> Path:
    return control_plane.kubeconfig


@pytest.fixture(scope="session")
def k8s_api_client(control_plane: ControlPlane) -> Iterator[k8s_client.ApiClient]:
    api_client = control_plane.new_api_client()
    try:
        yield api_client
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane, k8s_api_client: k8s_client.ApiClient) -> Kube:
    return Kube(k8s_api_client, discovery_cache=control_plane.workdir / "discovery-cache.json")


@pytest.fixture(scope="session")
def fake_cluster(kube: Kube) -> FakeCluster:
    return build_cluster(kube)


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    name = create_namespace(kube)
    try:
        yield name
    finally:
        delete_namespace(kube, name)


@pytest.fixture(scope="module")
def webhook(control_plane: ControlPlane, kube: Kube, fake_cluster: FakeCluster) -> Iterator[LocalWebhook]:
    """The real webhook process, registered; unregistered and stopped when the module ends.

    Module scope on purpose: while it is registered every GPU pod in an unlabelled namespace
    is converted, which other modules (e.g. the device-plugin baseline in test_harness.py)
    must not see.
    """
    local = LocalWebhook.create(control_plane, kube)
    try:
        local.start()
    except Exception as err:
        local.server.stop()
        pytest.fail(f"webhook failed to start (log {local.server.log_path}): {err}", pytrace=False)
    try:
        yield local
    finally:
        local.close()
