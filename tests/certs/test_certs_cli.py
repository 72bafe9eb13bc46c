from __future__ import annotations

import argparse
import base64
import subprocess
import sys
from pathlib import Path

import pytest
from certs_support import file_mode
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.verification import PolicyBuilder, Store

from dra_migrate.certs import cli
from dra_migrate.subcommands import Subcommands

ERROR_PREFIX = "dra-migrate certs generate: error: "


def run(argv: list[str]) -> int:
    # The same wiring as dra_migrate/cli.py, without depending on the other parts.
    parser = argparse.ArgumentParser(prog="dra-migrate")
    cli.register(Subcommands.of(parser, dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def generate(out: Path, *extra: str) -> int:
    return run(
        ["certs", "generate", "--service", "dra-webhook", "--namespace", "dra-system", "--out", str(out), *extra]
    )


def assert_one_line_error(capsys: pytest.CaptureFixture[str], code: int, fragment: str) -> None:
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith(ERROR_PREFIX)
    assert fragment in captured.err
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err


def test_prints_ca_bundle_and_writes_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert generate(out, "--ip", "127.0.0.1", "--dns", "localhost") == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1
    assert base64.b64decode(lines[0], validate=True) == (out / "ca.crt").read_bytes()
    assert "wrote" in captured.err and str(out) in captured.err
    assert file_mode(out / "tls.key") == 0o600
    assert file_mode(out / "ca.key") == 0o600

    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    leaf = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    verifier = PolicyBuilder().store(Store([ca])).build_server_verifier(x509.DNSName("localhost"))
    verifier.verify(leaf, [])
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [
        "dra-webhook",
        "dra-webhook.dra-system",
        "dra-webhook.dra-system.svc",
        "dra-webhook.dra-system.svc.cluster.local",
        "localhost",
    ]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_default_out_dir_is_certs_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(["certs", "generate", "--service", "s", "--namespace", "n"]) == 0
    assert (tmp_path / "certs-out" / "tls.crt").is_file()


def test_key_type_and_days(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(tmp_path, "--key-type", "rsa-2048", "--days", "30") == 0
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert isinstance(leaf.public_key(), rsa.RSAPublicKey)
    lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert 30 * 86400 <= lifetime.total_seconds() <= 30 * 86400 + 3600


def test_existing_ca_keeps_ca_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert generate(first) == 0
    bundle_before = capsys.readouterr().out
    assert generate(second, "--ca-cert", str(first / "ca.crt"), "--ca-key", str(first / "ca.key")) == 0
    assert capsys.readouterr().out == bundle_before
    assert (second / "ca.crt").read_bytes() == (first / "ca.crt").read_bytes()
    assert not (second / "ca.key").exists(), "an existing CA key is not copied around"
    old_leaf = x509.load_pem_x509_certificate((first / "tls.crt").read_bytes())
    new_leaf = x509.load_pem_x509_certificate((second / "tls.crt").read_bytes())
    assert new_leaf.serial_number != old_leaf.serial_number
    ca = x509.load_pem_x509_certificate((first / "ca.crt").read_bytes())
    PolicyBuilder().store(Store([ca])).build_server_verifier(x509.DNSName("dra-webhook.dra-system.svc")).verify(
        new_leaf, []
    )


def test_rotation_in_place_with_existing_ca(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(tmp_path) == 0
    before = capsys.readouterr().out
    ca_key = (tmp_path / "ca.key").read_bytes()
    assert generate(tmp_path, "--ca-cert", str(tmp_path / "ca.crt"), "--ca-key", str(tmp_path / "ca.key")) == 0
    assert capsys.readouterr().out == before
    assert (tmp_path / "ca.key").read_bytes() == ca_key


def test_unwritable_out_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A path below a regular file fails even for root, unlike a chmod-ed directory.
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_one_line_error(capsys, generate(blocker / "out"), "cannot write to")
    assert_one_line_error(capsys, generate(blocker), "a file; name a directory")


def test_missing_ca_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = generate(tmp_path, "--ca-cert", str(tmp_path / "nope.crt"), "--ca-key", str(tmp_path / "nope.key"))
    assert_one_line_error(capsys, code, "cannot read CA certificate")


def test_garbage_ca_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ca.crt").write_text("hello")
    (tmp_path / "ca.key").write_text("world")
    code = generate(tmp_path / "out", "--ca-cert", str(tmp_path / "ca.crt"), "--ca-key", str(tmp_path / "ca.key"))
    assert_one_line_error(capsys, code, "not a PEM certificate")


def test_ca_key_not_matching_ca_cert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert generate(a) == 0
    assert generate(b) == 0
    capsys.readouterr()
    code = generate(tmp_path / "out", "--ca-cert", str(a / "ca.crt"), "--ca-key", str(b / "ca.key"))
    assert_one_line_error(capsys, code, "CA key does not match the CA certificate")
    assert not (tmp_path / "out").exists()


def test_ca_cert_without_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(capsys, generate(tmp_path, "--ca-cert", "x"), "must be given together")


def test_invalid_service_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["certs", "generate", "--service", "Web_Hook", "--namespace", "ns", "--out", str(tmp_path)])
    assert_one_line_error(capsys, code, "not a valid DNS label")


@pytest.mark.parametrize("argv", [["--ip", "not-an-ip"], ["--days", "0"], ["--key-type", "dsa"]])
def test_bad_arguments_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        generate(tmp_path, *argv)
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_importing_the_cli_does_not_load_cryptography() -> None:
    code = "import sys, dra_migrate.certs.cli; print('cryptography' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_top_level_dra_migrate_command(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "dra_migrate",
        "certs",
        "generate",
        "--service",
        "s",
        "--namespace",
        "n",
        "--out",
        str(tmp_path),
    ]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert base64.b64decode(result.stdout.strip()) == (tmp_path / "ca.crt").read_bytes()
