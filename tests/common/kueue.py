"""Kueue's own configuration check, for the tests that judge the Kueue configuration the plan writes.

kueue-config-check (tests/planning/kueue-config-check/) loads a Configuration file with Kueue's
pkg/config Load, as Kueue's manager does at start-up, and prints Kueue's error when Kueue would refuse
it. It is found via $KUEUE_CONFIG_CHECK, then the cache of tests/planning/build-kueue-config-check.sh
(${DRA_MIGRATE_CACHE:-~/.cache/dra-migrate}/kueue-config-check-<kueue version>/kueue-config-check).
A missing or out-of-date build skips the tests that need it, except with CI=true, where it fails them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK_MODULE = REPO_ROOT / "tests" / "planning" / "kueue-config-check"
BUILD_CHECK = REPO_ROOT / "tests" / "planning" / "build-kueue-config-check.sh"
# The Configuration version Kueue's own manifests and chart write (config/components/manager,
# charts/kueue/values.yaml); Kueue still decodes v1beta1 and converts it.
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"


def kueue_version() -> str:
    """The Kueue release the check is built from: the one its go.mod requires."""
    for line in (CHECK_MODULE / "go.mod").read_text().splitlines():
        fields = line.split()
        if fields[:1] == ["sigs.k8s.io/kueue"]:
            return fields[1]
    raise AssertionError(f"{CHECK_MODULE / 'go.mod'} requires no sigs.k8s.io/kueue")


def _cache_root() -> Path:
    configured = os.environ.get("DRA_MIGRATE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "dra-migrate"


def _source_hash() -> str:
    """What the build script records beside the binary: the hash of go.mod, go.sum and the Go files."""
    files = [CHECK_MODULE / "go.mod", CHECK_MODULE / "go.sum", *sorted(CHECK_MODULE.glob("*.go"))]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


def _missing(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def require_kueue_config_check() -> Path:
    if configured := os.environ.get("KUEUE_CONFIG_CHECK"):
        if not os.access(configured, os.X_OK):
            pytest.fail(f"KUEUE_CONFIG_CHECK={configured!r} is not an executable file")
        return Path(configured)
    build_dir = _cache_root() / f"kueue-config-check-{kueue_version()}"
    binary = build_dir / "kueue-config-check"
    if not os.access(binary, os.X_OK):
        _missing(f"kueue-config-check not found at {binary}: build it with {BUILD_CHECK} or set $KUEUE_CONFIG_CHECK")
    stamp = build_dir / "source.sha256"
    if not stamp.is_file() or stamp.read_text().strip() != _source_hash():
        _missing(f"{binary} was built from other sources than {CHECK_MODULE}: run {BUILD_CHECK} again")
    return binary


def kueue_configuration(fragment: dict[str, Any]) -> dict[str, Any]:
    """A whole Configuration with the plan's fragment merged in, as an operator merges it into
    kueue-manager-config. Its only framework is the pod integration, the one the check registers:
    Kueue defaults an empty list to batch/job, which the check would refuse as not supported."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "integrations": {"frameworks": ["pod"]},
        **fragment,
    }


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    output: str


def kueue_verdict(binary: Path, configuration: dict[str, Any], directory: Path) -> Verdict:
    """Whether Kueue would start with the configuration, and what it says."""
    path = directory / "kueue-configuration.yaml"
    path.write_text(yaml.safe_dump(configuration, sort_keys=False))
    done = subprocess.run([str(binary), str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode in (0, 1), f"{binary} {path} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
    return Verdict(done.returncode == 0, (done.stdout + done.stderr).strip())
