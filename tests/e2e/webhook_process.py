"""The dra-migrate admission webhook as a REAL process, registered with the real kube-apiserver.

- TLS: `dra_migrate.certs.generate.create_bundle` (the code behind `dra-migrate certs generate`) makes a CA
  and a serving certificate with SANs IP:127.0.0.1 and DNS:localhost (plus the service names).
- Process: `dra-migrate serve --config FILE --cert tls.crt --key tls.key --host 127.0.0.1
  --port PORT --kubeconfig <admin kubeconfig> --access-log`, i.e. gunicorn over TLS, exactly
  what the Deployment in deploy/ runs. Its output goes to `<control plane log dir>/dra-migrate-webhook.log`
  (appended across restarts, each start marked with a line).
- Review counter: the sum of `dra_migrate_webhook_reviews_total{outcome}` on GET /metrics. The
  metrics directory is per process, so the count restarts at 0 after every (re)start.
- Registration: the MutatingWebhookConfiguration is built from `kubectl kustomize deploy/base`.
  Only what must differ for a local process is changed: the name (`dra-migrate-e2e`, so a
  dry-run apply of deploy/base never merges into it) and `clientConfig` (url + caBundle instead
  of the in-cluster Service). Rules, sideEffects, matchConditions, namespace/object selectors,
  failurePolicy, timeoutSeconds, matchPolicy and reinvocationPolicy stay exactly as deploy/ has them.
- Readiness is proven end to end: after registering (or restarting) the harness repeats a
  server-side dry-run create of a GPU "marker" pod until the webhook's review count grows, so a
  scenario never races the apiserver's configuration pick-up.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from admission import make_review
from kubernetes.client.exceptions import ApiException
from pods import gpu_pod
from polling import wait_for, wait_while_running
from prometheus_client.parser import text_string_to_metric_families

from dra_migrate.certs.generate import create_bundle, write_bundle

from .cluster_fixtures import Kube
from .controlplane import ControlPlane, free_port
from .controlplane import _die_with_parent as die_with_parent  # same PDEATHSIG guard as the control plane

Obj = dict[str, Any]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_BASE = REPO_ROOT / "deploy" / "base"
DEPLOY_SERVER_CONFIG = DEPLOY_BASE / "config.yaml"
E2E_CONFIGURATION_NAME = "dra-migrate-e2e"
WEBHOOK_LOG_NAME = "dra-migrate-webhook.log"
REVIEWS_METRIC = "dra_migrate_webhook_reviews"
MARKER_NAMESPACE = "default"
MARKER_POD = "e2e-webhook-marker"
READY_TIMEOUT_S = 30.0
CALLED_TIMEOUT_S = 30.0
STOP_GRACE_S = 3.0
STOP_TIMEOUT_S = 15.0


def dra_migrate_executable() -> Path:
    """The console script of the virtualenv running the tests (…/.venv/bin/dra-migrate)."""
    beside = Path(sys.executable).with_name("dra-migrate")
    if beside.is_file():
        return beside
    found = shutil.which("dra-migrate")
    if found is None:
        raise RuntimeError("dra-migrate is not installed in the test environment (pip install -e .)")
    return Path(found)


def dra_migrate(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the dra-migrate CLI; the caller checks the exit code."""
    return subprocess.run(
        [str(dra_migrate_executable()), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


# --------------------------------------------------------------------------- TLS


@dataclass(frozen=True)
class WebhookTls:
    directory: Path
    ca_pem: bytes

    @property
    def cert(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def key(self) -> Path:
        return self.directory / "tls.key"

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_pem).decode()

    def client_context(self) -> ssl.SSLContext:
        """Verifies the server like kube-apiserver does: against the CA, by the IP SAN."""
        return ssl.create_default_context(cafile=str(self.ca_cert))


def generate_tls(directory: Path) -> WebhookTls:
    bundle = create_bundle(
        service="dra-migrate", namespace="dra-migrate", extra_dns=["localhost"], ip_addresses=["127.0.0.1"]
    )
    write_bundle(bundle, directory, include_ca_key=False)
    return WebhookTls(directory=directory, ca_pem=bundle.ca.cert_pem())


# --------------------------------------------------------------------------- configuration files


def deploy_server_config() -> Obj:
    """deploy/base/config.yaml: the configuration the Deployment mounts."""
    loaded = yaml.safe_load(DEPLOY_SERVER_CONFIG.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), f"{DEPLOY_SERVER_CONFIG} is not a mapping"
    return loaded


def generated_match_conditions(config_file: Path) -> list[Obj]:
    """`dra-migrate webhook match-conditions --config FILE`, parsed."""
    result = dra_migrate("webhook", "match-conditions", "--config", str(config_file))
    if result.returncode != 0:
        raise RuntimeError(f"dra-migrate webhook match-conditions failed ({result.returncode}): {result.stderr}")
    conditions = yaml.safe_load(result.stdout)
    assert isinstance(conditions, list) and conditions, f"unexpected match-conditions output: {result.stdout!r}"
    return conditions


def deploy_configuration(plane: ControlPlane) -> Obj:
    """The MutatingWebhookConfiguration of `kubectl kustomize deploy/base`, verbatim."""
    built = plane.kubectl("kustomize", str(DEPLOY_BASE)).stdout
    for document in yaml.safe_load_all(built):
        if isinstance(document, dict) and document.get("kind") == "MutatingWebhookConfiguration":
            return document
    raise AssertionError("kubectl kustomize deploy/base has no MutatingWebhookConfiguration")


def webhook_configuration(
    deployed: Mapping[str, Any], *, url: str, ca_bundle: str, name: str = E2E_CONFIGURATION_NAME
) -> Obj:
    """`deployed` (deploy/'s configuration) pointed at a local URL; every webhook setting kept."""
    configuration = copy.deepcopy(dict(deployed))
    labels = dict((configuration["metadata"]).get("labels") or {})
    configuration["metadata"] = {"name": name, "labels": labels}
    for hook in configuration["webhooks"]:
        hook["clientConfig"] = {"url": url, "caBundle": ca_bundle}
    return configuration


# --------------------------------------------------------------------------- the process


def parse_reviews(metrics_text: str) -> dict[str, float]:
    """Reviews answered, by outcome, from the Prometheus text exposition."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != REVIEWS_METRIC:
            continue
        for sample in family.samples:
            if sample.name == f"{REVIEWS_METRIC}_total":
                outcome = sample.labels.get("outcome", "")
                counts[outcome] = counts.get(outcome, 0.0) + sample.value
    return counts


def _get(url: str, context: ssl.SSLContext, timeout: float = 3.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (OSError, ssl.SSLError) as err:
        return 0, str(err)


@dataclass
class WebhookServer:
    """One `dra-migrate serve` process at a time, on a fixed port across restarts."""

    tls: WebhookTls
    kubeconfig: Path
    log_path: Path
    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    config_file: Path | None = None
    starts: int = 0
    extra_args: tuple[str, ...] = ()  # more `serve` options, e.g. --client-ca

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/mutate"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def review(
        self, pod: Mapping[str, Any], namespace: str, *, dry_run: bool = False, start: threading.Barrier | None = None
    ) -> Obj:
        """POST an AdmissionReview for creating `pod` to this server itself, as kube-apiserver would
        (bypassing the apiserver and its selectors); its AdmissionResponse. With `start`, the TLS
        connection is made first and the request sent once every party has reached the barrier."""
        review = make_review(pod, namespace=namespace, dry_run=dry_run)
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls.client_context(), timeout=10)
        try:
            connection.connect()
            if start is not None:
                start.wait()
            connection.request("POST", "/mutate", json.dumps(review), {"Content-Type": "application/json"})
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        if answer.status != 200:
            raise AssertionError(f"{answer.status}: {body.decode(errors='replace')}")
        response: Obj = json.loads(body)["response"]
        return response

    def argv(self, config_file: Path) -> list[str]:
        return [
            str(dra_migrate_executable()),
            "serve",
            "--config",
            str(config_file),
            "--cert",
            str(self.tls.cert),
            "--key",
            str(self.tls.key),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--kubeconfig",
            str(self.kubeconfig),
            "--access-log",
            *self.extra_args,
        ]

    def start(self, config_file: Path, timeout: float = READY_TIMEOUT_S) -> None:
        """Start and wait for GET /readyz == 200 (certificate loaded, config valid)."""
        if self.running:
            raise RuntimeError("webhook already running; stop it first")
        self.starts += 1
        argv = self.argv(config_file)
        self._log_line(f"start #{self.starts}: {' '.join(argv)}")
        # Own TMPDIR: `serve` puts its Prometheus multiprocess directory there, and a process
        # killed hard cannot remove it.
        tmpdir = self.workdir / "tmp"
        tmpdir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "TMPDIR": str(tmpdir)},
                start_new_session=True,  # its own process group: master + workers, stopped together
                preexec_fn=die_with_parent,
            )
        self.config_file = config_file
        last = (0, "")

        def ready() -> bool:
            nonlocal last
            last = _get(f"{self.base_url}/readyz", self.tls.client_context())
            return last[0] == 200

        wait_while_running(
            ready,
            self.process.poll,
            what="dra-migrate serve's GET /readyz to answer 200",
            log=lambda: f"last answer: {last[0]} {last[1]}; log {self.log_path}:\n{self.log_tail()}",
            timeout=timeout,
        )

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGTERM (gunicorn's graceful shutdown); SIGKILL to the process group after `grace` seconds.

        The bound matters: a graceful stop waits for open connections, and kube-apiserver's HTTP
        client keeps spare ones that never carry a request, so it can last the whole
        graceful_timeout (20 s).
        """
        process, self.process = self.process, None
        if process is None:
            return
        how = "exited"
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace)
                how = "stopped gracefully"
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT_S)
                how = f"killed (still running {grace:.0f}s after SIGTERM)"
        self._log_line(f"{how}, exit {process.returncode}")

    def _log_line(self, text: str) -> None:
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(f"===== e2e {time.strftime('%H:%M:%S')}: {text}\n")

    def metrics(self) -> str:
        status, body = _get(f"{self.base_url}/metrics", self.tls.client_context())
        if status != 200:
            raise AssertionError(f"GET /metrics answered {status}: {body}")
        return body

    def reviews(self) -> dict[str, float]:
        return parse_reviews(self.metrics())

    def review_count(self) -> int:
        return int(sum(self.reviews().values()))

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"


# --------------------------------------------------------------------------- webhook + registration


def gpu_marker_pod() -> Obj:
    """Dry-run only: proves the apiserver -> webhook path (sideEffects NoneOnDryRun: nothing is created)."""
    return gpu_pod(MARKER_POD, labels={"e2e.dra-migrate.io/marker": "true"})


@dataclass
class LocalWebhook:
    """The running webhook plus the MutatingWebhookConfiguration that sends pods to it."""

    plane: ControlPlane
    kube: Kube
    server: WebhookServer
    workdir: Path
    deployed: Obj  # the deploy/ configuration, verbatim
    registered: Obj = field(default_factory=dict)
    default_config: Path = DEPLOY_SERVER_CONFIG

    # ---- lifecycle

    @classmethod
    def create(cls, plane: ControlPlane, kube: Kube) -> LocalWebhook:
        workdir = plane.workdir / "webhook"
        workdir.mkdir(parents=True, exist_ok=True)
        tls = generate_tls(workdir / "tls")
        server = WebhookServer(
            tls=tls, kubeconfig=plane.kubeconfig, log_path=plane.log_dir / WEBHOOK_LOG_NAME, workdir=workdir
        )
        return cls(plane=plane, kube=kube, server=server, workdir=workdir, deployed=deploy_configuration(plane))

    def start(self) -> None:
        """Start the server with deploy/base/config.yaml, register, wait until the apiserver calls it."""
        self.server.start(self.default_config)
        self.registered = webhook_configuration(self.deployed, url=self.server.url, ca_bundle=self.server.tls.ca_bundle)
        self.kube.delete("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", E2E_CONFIGURATION_NAME)
        self.kube.create(self.registered)
        self.wait_until_called()

    def close(self) -> None:
        """Unregister, wait until the apiserver stops calling, then stop the process."""
        try:
            self.kube.delete("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", E2E_CONFIGURATION_NAME)
            if self.server.running:
                wait_for(
                    self._not_called,
                    interval=0.2,
                    what="the apiserver to stop calling the webhook",
                    timeout=CALLED_TIMEOUT_S,
                )
        finally:
            self.server.stop()

    # ---- probes

    def _marker_counted(self) -> bool:
        before = self.server.review_count()
        try:
            self.kube.create(gpu_marker_pod(), MARKER_NAMESPACE, dry_run="All")
        except ApiException:
            return False  # e.g. "connection refused" while the apiserver still holds an old connection
        return self.server.review_count() > before

    def _not_called(self) -> bool:
        before = self.server.review_count()
        self.kube.create(gpu_marker_pod(), MARKER_NAMESPACE, dry_run="All")
        return self.server.review_count() == before

    def wait_until_called(self, timeout: float = CALLED_TIMEOUT_S) -> None:
        """Repeat a dry-run GPU marker create until the webhook has answered one."""
        wait_for(
            self._marker_counted,
            interval=0.2,
            what=f"kube-apiserver to call the webhook at {self.server.url}",
            timeout=timeout,
        )

    def review_count(self) -> int:
        return self.server.review_count()

    def reviews(self) -> dict[str, float]:
        return self.server.reviews()

    @property
    def hook(self) -> Obj:
        """The (single) webhook entry as registered."""
        [hook] = self.registered["webhooks"]
        return dict(hook)

    @property
    def failure_policy(self) -> str:
        [hook] = self.deployed["webhooks"]
        return str(hook.get("failurePolicy", "Fail"))

    # ---- mode changes

    def write_config(self, name: str, config: Mapping[str, Any]) -> Path:
        path = self.workdir / f"config-{name}.yaml"
        path.write_text(yaml.safe_dump(dict(config), sort_keys=False), encoding="utf-8")
        return path

    def restart(self, config_file: Path) -> None:
        self.server.stop()
        self.server.start(config_file)
        self.wait_until_called()

    def ensure_default(self) -> None:
        """Running with deploy/base/config.yaml (what every scenario assumes unless it says otherwise)."""
        if not self.server.running or self.server.config_file != self.default_config:
            if self.server.running:
                self.server.stop()
            self.server.start(self.default_config)
            self.wait_until_called()

    @contextmanager
    def running_with(self, name: str, config: Mapping[str, Any]) -> Iterator[Path]:
        """Restart with `config` (a whole configuration file); back to the default afterwards."""
        path = self.write_config(name, config)
        self.restart(path)
        try:
            yield path
        finally:
            self.restart(self.default_config)

    @contextmanager
    def outage(self) -> Iterator[None]:
        """The webhook process is down inside the block (the configuration stays registered)."""
        self.server.stop()
        try:
            yield
        finally:
            self.server.start(self.default_config)
            self.wait_until_called()
