"""Which Kubernetes releases the e2e suite runs on, and where each release's binaries are.

A supported release is a directory `k8sbins/<minor>/` holding the wrapper module that pins its
newest patch (written by `build-control-plane.sh --refresh --release <minor>`); one etcd,
pinned by `etcdbin/go.mod`, serves them all. `DRA_MIGRATE_E2E_RELEASES` (e.g. `1.37` or
`1.34,1.37`) selects a subset. Binaries are looked up in the same order as the build script:

1. `TEST_ASSET_<NAME>`, then `$KUBEBUILDER_ASSETS/<name>`: for the release the binary's
   `--version` names (etcd: for every release);
2. the per-version cache `${DRA_MIGRATE_CACHE:-~/.cache/dra-migrate}/k8s-vX.Y.Z/` and `etcd-vX.Y.Z/`.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parent
BUILD_SCRIPT = E2E_DIR / "build-control-plane.sh"
K8S_WRAPPERS = E2E_DIR / "k8sbins"
ETCD_WRAPPER = E2E_DIR / "etcdbin" / "go.mod"
K8S_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
BINARIES = ("etcd", *K8S_BINARIES)
RELEASES_ENV = "DRA_MIGRATE_E2E_RELEASES"
_MINOR = re.compile(r"1\.\d+")


class ReleaseSelectionError(ValueError):
    pass


def _pinned(go_mod: Path, module: str) -> str:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if not match:
        raise RuntimeError(f"{module} is not pinned in {go_mod}")
    return match.group(1)


@dataclass(frozen=True, order=True)
class Release:
    """A supported Kubernetes minor release, e.g. Release("1.36")."""

    minor: str

    @property
    def kubernetes(self) -> str:
        """The pinned patch, e.g. v1.36.3."""
        return _pinned(K8S_WRAPPERS / self.minor / "go.mod", "k8s.io/kubernetes")

    @property
    def number(self) -> int:
        return int(self.minor.split(".")[1])

    def __str__(self) -> str:
        return self.minor


def etcd_version() -> str:
    return _pinned(ETCD_WRAPPER, "go.etcd.io/etcd/server/v3")


def supported_releases() -> list[Release]:
    minors = [p.name for p in K8S_WRAPPERS.iterdir() if (p / "go.mod").is_file() and _MINOR.fullmatch(p.name)]
    return sorted((Release(m) for m in minors), key=lambda r: r.number)


def selected_releases(env: Mapping[str, str] | None = None) -> list[Release]:
    """The releases to run on: `DRA_MIGRATE_E2E_RELEASES` (comma-separated minors) or all."""
    env = os.environ if env is None else env
    supported = supported_releases()
    wanted = [part.strip() for part in env.get(RELEASES_ENV, "").split(",") if part.strip()]
    if not wanted:
        return supported
    unknown = [w for w in wanted if Release(w) not in supported]
    if unknown:
        raise ReleaseSelectionError(
            f"{RELEASES_ENV}={env[RELEASES_ENV]!r}: unknown release(s) {', '.join(unknown)}; "
            f"supported: {', '.join(map(str, supported))}"
        )
    return sorted({Release(w) for w in wanted}, key=lambda r: r.number)


# --------------------------------------------------------------------------- lookup


def asset_env_var(name: str) -> str:
    """kube-apiserver -> TEST_ASSET_KUBE_APISERVER (controller-runtime envtest naming)."""
    return "TEST_ASSET_" + name.upper().replace("-", "_")


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    configured = env.get("DRA_MIGRATE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "dra-migrate"


def cached_binary_dir(name: str, release: Release, env: Mapping[str, str] | None = None) -> Path:
    if name == "etcd":
        return cache_root(env) / f"etcd-{etcd_version()}"
    return cache_root(env) / f"k8s-{release.kubernetes}"


def _executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


@functools.cache
def binary_version(path: Path) -> str:
    """The Kubernetes version a binary reports (e.g. v1.36.3), "" if it says none."""
    argv = [str(path), "version", "--client=true", "-o", "yaml"] if path.name == "kubectl" else [str(path), "--version"]
    try:
        output = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False).stdout
    except OSError:
        return ""
    match = re.search(r"gitVersion:\s*(v\S+)" if path.name == "kubectl" else r"(v\d+\.\d+\.\S+)", output)
    return match.group(1) if match else ""


def _user_binary(name: str, release: Release, env: Mapping[str, str]) -> Path | None:
    candidates: list[Path] = []
    if explicit := env.get(asset_env_var(name)):
        candidates.append(Path(explicit))
    if assets := env.get("KUBEBUILDER_ASSETS"):
        candidates.append(Path(assets) / name)
    for candidate in candidates:
        if (found := _executable(candidate)) and (
            name == "etcd" or binary_version(found).startswith(f"v{release.minor}.")
        ):
            return found
    return None


def find_binary(name: str, release: Release, env: Mapping[str, str] | None = None) -> Path | None:
    """Same lookup order as build-control-plane.sh; None if the binary is nowhere."""
    env = os.environ if env is None else env
    return _user_binary(name, release, env) or _executable(cached_binary_dir(name, release, env) / name)


def find_binaries(release: Release, env: Mapping[str, str] | None = None) -> dict[str, Path] | None:
    """Paths of all control-plane binaries of `release`, or None if any is missing."""
    found = {name: find_binary(name, release, env) for name in BINARIES}
    if any(path is None for path in found.values()):
        return None
    return {name: path for name, path in found.items() if path is not None}


def missing_binaries(release: Release, env: Mapping[str, str] | None = None) -> list[str]:
    return [name for name in BINARIES if find_binary(name, release, env) is None]
