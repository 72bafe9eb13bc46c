"""Start and stop a real local Kubernetes control plane (no kubelet, no Docker).

etcd + kube-apiserver + kube-controller-manager + kube-scheduler of one release run as
plain processes on 127.0.0.1 with free ports, a temp dir and a generated PKI. The
binaries come from binaries.py.
"""

from __future__ import annotations

import base64
import ctypes
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from polling import wait_while_running

from dra_migrate.engine import RESOURCE_GROUP, Target

from .binaries import Release
from .pki import Pki, create_pki

# deployment/replicaset controllers let scenarios use Deployments; node-lifecycle
# stays off because with no kubelet it would mark every fake node NotReady.
CONTROLLERS = (
    "resourceclaim-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "deployment-controller",
    "replicaset-controller",
    "resourcequota-controller",  # computes ResourceQuota status, which quota admission needs
)
# The resource.k8s.io kinds whose versions a control plane may switch on.
DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule")
SERVICE_CIDR = "10.0.0.0/24"
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 15.0
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    # The kernel picks an unused port; the tiny race until the server binds it is acceptable here.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self.popen = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Own session: a Ctrl-C aimed at pytest must not kill the cluster before teardown.
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    def exited(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def terminate(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()

    def wait_or_kill(self, timeout: float) -> None:
        if self.popen is None:
            return
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=timeout)
        finally:
            if self._log is not None:
                self._log.close()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"


def _die_with_parent() -> None:
    """In the child: get SIGTERM if pytest dies without running teardown (Linux only)."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class StartupError(RuntimeError):
    pass


def _probe(url: str, context: ssl.SSLContext | None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=3) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (OSError, ssl.SSLError) as err:  # not listening yet, connection reset, ...
        return 0, str(err)


def _insecure_tls() -> ssl.SSLContext:
    # KCM and scheduler serve /healthz with self-signed certs; only liveness is checked there.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


# --------------------------------------------------------------------------- control plane


@dataclass
class Ports:
    etcd_client: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)
    controller_manager: int = field(default_factory=free_port)
    scheduler: int = field(default_factory=free_port)


@dataclass(frozen=True)
class ControlPlaneSpec:
    """Which control plane a test runs on: a release, with its default APIs or with every
    `resource.k8s.io` version it has switched on (`all_dra_versions`)."""

    release: Release
    all_dra_versions: bool = False

    @property
    def id(self) -> str:
        return f"{self.release}-all-dra-versions" if self.all_dra_versions else str(self.release)

    @property
    def target(self) -> Target:
        return Target.parse(self.release.minor)

    def runtime_config(self) -> list[str]:
        """`--runtime-config` entries for every `resource.k8s.io` version the release has for a DRA
        kind but does not serve by default (the engine's release table): v1beta1 and v1beta2 from
        1.34 on, and v1alpha3 where DeviceTaintRule is there. Feature gates keep their defaults:
        they decide what takes effect, not what is served."""
        if not self.all_dra_versions:
            return []
        release = self.target.release
        versions = {
            v for kind in DRA_KINDS for v in release.served_versions(kind) if not release.on_by_default(v, kind)
        }
        return [f"{RESOURCE_GROUP}/{version}=true" for version in sorted(versions)]


class ControlPlane:
    """One etcd + kube-apiserver + kube-controller-manager + kube-scheduler on loopback."""

    def __init__(
        self,
        binaries: Mapping[str, Path],
        workdir: Path,
        spec: ControlPlaneSpec,
        extra_apiserver_args: Sequence[str] = (),
        extra_controllers: Sequence[str] = (),
        extra_controller_manager_args: Sequence[str] = (),
    ) -> None:
        self.binaries = dict(binaries)
        self.spec = spec
        self.workdir = workdir
        self.extra_apiserver_args = list(extra_apiserver_args)
        self.extra_controllers = list(extra_controllers)
        self.extra_controller_manager_args = list(extra_controller_manager_args)
        self.log_dir = workdir / "logs"
        self.ports = Ports()
        self.server = f"https://127.0.0.1:{self.ports.apiserver}"
        self.kubeconfig = workdir / "admin.kubeconfig"
        self.pki: Pki | None = None
        self.processes: list[ManagedProcess] = []

    # ---- lifecycle

    def start(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Start all components in dependency order; stops what started if anything fails."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.pki = create_pki(self.workdir / "pki")
        self._write_kubeconfig(self.pki)
        try:
            self._start_and_wait("etcd", self._etcd_args(), self._etcd_ready, timeout)
            self._start_and_wait("kube-apiserver", self._apiserver_args(self.pki), self._apiserver_ready, timeout)
            self._start_and_wait(
                "kube-controller-manager",
                self._controller_manager_args(),
                self._healthz_ready(self.ports.controller_manager),
                timeout,
            )
            self._start_and_wait(
                "kube-scheduler", self._scheduler_args(), self._healthz_ready(self.ports.scheduler), timeout
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop newest first (etcd last, so the apiserver never loses it mid-shutdown).

        Each process gets SIGTERM, then SIGKILL if it outlives the grace period.
        """
        for process in reversed(self.processes):
            process.terminate()
            process.wait_or_kill(STOP_TIMEOUT_S)

    def _start_and_wait(self, name: str, args: Sequence[str], ready: Callable[[], bool], timeout: float) -> None:
        process = ManagedProcess(name, [str(self.binaries[name]), *args], self.log_dir / f"{name}.log")
        self.processes.append(process)
        process.start()

        try:
            wait_while_running(
                ready,
                process.exited,
                what=f"{name} to be ready",
                log=lambda: f"log {process.log_path}:\n{process.log_tail()}",
                timeout=timeout,
                interval=0.25,
            )
        except AssertionError as failed:
            raise StartupError(f"{name}: {failed}") from None

    # ---- readiness probes

    def _etcd_ready(self) -> bool:
        status, body = _probe(f"http://127.0.0.1:{self.ports.etcd_client}/health", None)
        return status == 200 and '"health":"true"' in body.replace(" ", "")

    def admin_tls_context(self) -> ssl.SSLContext:
        assert self.pki is not None
        context = ssl.create_default_context(cafile=str(self.pki.ca.files.cert))
        context.load_cert_chain(str(self.pki.admin.cert), str(self.pki.admin.key))
        return context

    def _apiserver_ready(self) -> bool:
        status, body = _probe(f"{self.server}/readyz", self.admin_tls_context())
        return status == 200 and body.strip() == "ok"

    def _healthz_ready(self, port: int) -> Callable[[], bool]:
        def ready() -> bool:
            status, body = _probe(f"https://127.0.0.1:{port}/healthz", _insecure_tls())
            return status == 200 and body.strip() == "ok"

        return ready

    # ---- command lines

    def _etcd_args(self) -> list[str]:
        client = f"http://127.0.0.1:{self.ports.etcd_client}"
        peer = f"http://127.0.0.1:{self.ports.etcd_peer}"
        return [
            "--name=default",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync",  # throwaway data; fsync only slows tests down
        ]

    def _apiserver_args(self, pki: Pki) -> list[str]:
        return [
            f"--etcd-servers=http://127.0.0.1:{self.ports.etcd_client}",
            f"--secure-port={self.ports.apiserver}",
            # Without these it refuses to start on a host with no default route.
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--cert-dir={self.workdir / 'apiserver'}",
            f"--tls-cert-file={pki.serving.cert}",
            f"--tls-private-key-file={pki.serving.key}",
            f"--client-ca-file={pki.ca.files.cert}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-issuer={self.server}",
            f"--service-account-key-file={pki.service_account_key}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            # No token controller runs, and fake nodes must not get a not-ready taint on create.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            # Endpoints may not hold a loopback IP; skip reconciling the `kubernetes` service.
            "--endpoint-reconciler-type=none",
            *([f"--runtime-config={','.join(runtime)}"] if (runtime := self.spec.runtime_config()) else []),
            *self.extra_apiserver_args,
        ]

    def _component_common_args(self, port: int) -> list[str]:
        return [
            # No --authentication/authorization-kubeconfig: delegated auth would want a
            # requestheader CA we do not set up, and /healthz is always allowed anyway.
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'certs'}",
        ]

    def _controller_manager_args(self) -> list[str]:
        return [
            *self._component_common_args(self.ports.controller_manager),
            f"--controllers={','.join([*CONTROLLERS, *self.extra_controllers])}",
            *self.extra_controller_manager_args,
        ]

    def _scheduler_args(self) -> list[str]:
        return self._component_common_args(self.ports.scheduler)

    # ---- clients

    def _write_kubeconfig(self, pki: Pki) -> None:
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        config: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {"server": self.server, "certificate-authority-data": b64(pki.ca.files.cert)},
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate-data": b64(pki.admin.cert),
                        "client-key-data": b64(pki.admin.key),
                    },
                }
            ],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)

    def new_api_client(self) -> k8s_client.ApiClient:
        api_client: k8s_client.ApiClient = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig)
        )
        return api_client

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the pinned kubectl against this cluster (handy for debugging and `apply -f`)."""
        argv = [str(self.binaries["kubectl"]), f"--kubeconfig={self.kubeconfig}", *args]
        return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=120)

    def log_paths(self) -> dict[str, Path]:
        return {process.name: process.log_path for process in self.processes}


def server_git_version(api_client: k8s_client.ApiClient) -> str:
    return str(k8s_client.VersionApi(api_client).get_code().git_version)


def remove_workdir(workdir: Path) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
