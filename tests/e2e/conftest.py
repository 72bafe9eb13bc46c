"""Session fixtures for the e2e suite: a real control plane plus a fake GPU cluster.

Fixtures (see README-style notes in controlplane.py / cluster_fixtures.py):
  control_plane    session  ControlPlane of one release (started; .spec, .kubeconfig, .server, .log_dir,
                            .kubectl()); every test using it runs once per selected release
  release, target  function the control plane's Release and the engine's Target for it
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

from dra_migrate.engine import Target

from .binaries import (
    BUILD_SCRIPT,
    Release,
    ReleaseSelectionError,
    find_binaries,
    missing_binaries,
    selected_releases,
)
from .cluster_fixtures import FakeCluster, Kube, build_cluster, create_namespace, delete_namespace
from .controlplane import ControlPlane, ControlPlaneSpec, remove_workdir
from .webhook_process import LocalWebhook

E2E_DIR = Path(__file__).resolve().parent
RUNNING_PLANE = pytest.StashKey[ControlPlane]()
FAILED_PLANES = pytest.StashKey[list[ControlPlane]]()
ALL_DRA_VERSIONS = "all_dra_versions"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def _keep_workdir() -> bool:
    return os.environ.get("DRA_MIGRATE_E2E_KEEP", "").strip().lower() in ("true", "1")


# --------------------------------------------------------------------------- hooks


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{ALL_DRA_VERSIONS}: run on control planes that serve every resource.k8s.io version the release has "
        "(--runtime-config), instead of the default ones",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that needs a control plane runs once per selected release (one session-scoped
    control plane per release; pytest stops one before it starts the next)."""
    if "control_plane" not in metafunc.fixturenames:
        return
    try:
        releases = selected_releases()
    except ReleaseSelectionError as err:
        raise pytest.UsageError(str(err)) from None
    all_versions = metafunc.definition.get_closest_marker(ALL_DRA_VERSIONS) is not None
    specs = [ControlPlaneSpec(release, all_dra_versions=all_versions) for release in releases]
    metafunc.parametrize("control_plane", specs, ids=[s.id for s in specs], indirect=True, scope="session")


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
    plane = item.config.stash.get(RUNNING_PLANE, None)
    if report.failed and item.get_closest_marker("e2e") is not None and plane is not None:
        failed = item.config.stash.setdefault(FAILED_PLANES, [])
        if plane not in failed:
            failed.append(plane)
        report.sections.append(("control-plane logs", f"kept in {plane.log_dir}"))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for plane in terminalreporter.config.stash.get(FAILED_PLANES, []):
        terminalreporter.write_line(f"e2e control-plane logs ({plane.spec.id}) kept in {plane.log_dir}", yellow=True)


# --------------------------------------------------------------------------- fixtures


def _require_binaries(release: Release) -> dict[str, Path]:
    binaries = find_binaries(release)
    if binaries is not None:
        return binaries
    message = (
        f"Kubernetes {release} control-plane binaries missing ({', '.join(missing_binaries(release))}); "
        f"run {BUILD_SCRIPT} --release {release} (or set TEST_ASSET_<NAME> / KUBEBUILDER_ASSETS)"
    )
    if _in_ci():
        pytest.fail(message + " [CI=true: missing binaries are an error, not a skip]", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """The control plane of one release (parametrized by pytest_generate_tests)."""
    spec: ControlPlaneSpec = request.param
    binaries = _require_binaries(spec.release)
    workdir = Path(tempfile.mkdtemp(prefix=f"dra-migrate-e2e-{spec.id}-"))
    plane = ControlPlane(binaries, workdir, spec)
    try:
        plane.start()
    except Exception as err:
        # Keep the workdir: the logs are the only way to see why a component did not come up.
        pytest.fail(f"{spec.id} control plane failed to start (logs kept in {plane.log_dir}): {err}", pytrace=False)
    request.config.stash[RUNNING_PLANE] = plane
    try:
        yield plane
    finally:
        plane.stop()
        del request.config.stash[RUNNING_PLANE]
        if plane not in request.config.stash.get(FAILED_PLANES, []) and not _keep_workdir():
            remove_workdir(workdir)


@pytest.fixture
def release(control_plane: ControlPlane) -> Release:
    return control_plane.spec.release


@pytest.fixture
def target(control_plane: ControlPlane) -> Target:
    """What the engine knows about the control plane's release (gates, served versions)."""
    return control_plane.spec.target


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
