"""`dra-migrate serve` start-up checks: clear errors, exit code 2, no traceback, no server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from admission import make_review
from fakekube import write_kubeconfig
from pods import gpu_pod
from webhook_support import ROOT, SERVE_COMMAND, StartServer

from dra_migrate.cli import main


def _serve(tls_dir: Path, *args: str) -> list[str]:
    return ["serve", "--cert", str(tls_dir / "tls.crt"), "--key", str(tls_dir / "tls.key"), *args]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("webhook:\n  mode: enforce\n  apiUnavaliable: deny\n", "apiUnavaliable"),
        ("webhook:\n  mode: preview\n", "webhook.mode"),
        ("mappings:\n  - resource: x.com/y\n", "deviceClassName"),
        ("targetVersion: '1.20'\n", "targetVersion"),
        ("webhook: [unclosed\n", "invalid YAML"),
        ("- just\n- a list\n", "mapping"),
    ],
)
def test_invalid_config_exits_2_with_the_field(
    tls_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(content)
    kubeconfig = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:1")
    assert main(_serve(tls_dir, "--config", str(config), "--kubeconfig", str(kubeconfig))) == 2
    err = capsys.readouterr().err
    assert err.startswith("dra-migrate serve: error: invalid configuration: ")
    assert str(config) in err and expected in err
    assert "Traceback" not in err


def test_missing_config_file(tls_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_serve(tls_dir, "--config", str(tmp_path / "nope.yaml"))) == 2
    assert "cannot read" in capsys.readouterr().err


def test_unusable_certificate(tls_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tls.crt").write_text("not a certificate")
    assert main(["serve", "--cert", str(tmp_path / "tls.crt"), "--key", str(tls_dir / "tls.key")]) == 2
    assert "cannot use the TLS certificate" in capsys.readouterr().err


def test_no_kubernetes_configuration_in_a_subprocess(tls_dir: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    done = subprocess.run([*SERVE_COMMAND, *_serve(tls_dir)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert "no Kubernetes API configuration" in done.stderr and "Traceback" not in done.stderr


def test_runs_without_config_file(start_server: StartServer, kubeconfig: Path) -> None:
    """No --config: built-in mappings and default policy apply."""
    server = start_server(kubeconfig=kubeconfig, extra_args=("--noop-route",))
    response = server.review(make_review(gpu_pod()))
    assert response["allowed"] is True and "patch" in response
    noop = server.post(make_review(gpu_pod()), path="/mutate-noop").json()["response"]
    assert noop["allowed"] is True and "patch" not in noop


def test_dra_migrate_entry_point_help() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dra-migrate")), "serve", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0
    for flag in ("--config", "--cert", "--key", "--port", "--kubeconfig", "--noop-route"):
        assert flag in done.stdout


def test_serve_removes_the_private_directories_their_killed_masters_left(tmp_path: Path) -> None:
    """The pod's /tmp outlives the container's restarts: a master killed before its cleanup leaves its
    directory (metrics, the copy of the cluster), which the next `serve` removes, and only those."""
    from dra_migrate.webhook import cli

    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    directories = {}
    for label, pid in (("dead", finished.stdout.strip()), ("mine", str(os.getpid())), ("live", str(os.getppid()))):
        directory = tmp_path / f"{cli.PRIVATE_DIRECTORY_PREFIX}{label}"
        directory.mkdir()
        (directory / cli.MASTER_PID_FILE).write_text(pid)
        directories[label] = directory
    unmarked = tmp_path / f"{cli.PRIVATE_DIRECTORY_PREFIX}unmarked"
    unmarked.mkdir()
    cli._remove_abandoned_directories(tmp_path)
    assert not directories["dead"].exists() and not directories["mine"].exists()
    assert directories["live"].exists() and unmarked.exists()
