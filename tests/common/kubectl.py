"""The real kubectl as a YAML reader: what users' `kubectl apply -f` makes of a manifest.

`kubectl label --local -f - -o json` decodes YAML exactly as `apply`/`create` do (sigs.k8s.io/yaml,
go-yaml v2) without a cluster, and prints the object as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

_RELEASE = "v1.34.4"


def find_kubectl() -> Path | None:
    """TEST_ASSET_KUBECTL, $KUBEBUILDER_ASSETS/kubectl, then the e2e suite's binary cache."""
    candidates: list[Path] = []
    if explicit := os.environ.get("TEST_ASSET_KUBECTL"):
        candidates.append(Path(explicit))
    if assets := os.environ.get("KUBEBUILDER_ASSETS"):
        candidates.append(Path(assets) / "kubectl")
    cache = Path(os.environ.get("DRA_MIGRATE_CACHE") or Path.home() / ".cache" / "dra-migrate")
    candidates.append(cache / f"k8s-{_RELEASE}" / "kubectl")
    candidates.extend(sorted(cache.glob("k8s-v*/kubectl"), reverse=True))
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def require_kubectl() -> Path:
    found = find_kubectl()
    if found is None:
        message = "kubectl not found: run tests/e2e/build-control-plane.sh (or set TEST_ASSET_KUBECTL)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def require_standalone_kustomize() -> str:
    """The standalone kustomize (tests/translator/build-kustomize.sh): $KUSTOMIZE, on PATH, or built in the
    cache. kubectl kustomize has no --enable-exec, so exec KRM functions need it."""
    import shutil

    configured = os.environ.get("KUSTOMIZE")
    cache = Path(os.environ.get("DRA_MIGRATE_CACHE") or Path.home() / ".cache" / "dra-migrate")
    cached = sorted(cache.glob("kustomize-v*/kustomize"))
    found = (
        shutil.which(configured) if configured else shutil.which("kustomize") or (str(cached[-1]) if cached else None)
    )
    if found is None:
        message = "no kustomize: run tests/translator/build-kustomize.sh (kubectl kustomize has no --enable-exec)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def kubectl_read(kubectl: Path, manifest: str) -> dict[str, Any]:
    """The one object in `manifest` as kubectl decodes it (raises with kubectl's message on failure)."""
    objects = kubectl_read_all(kubectl, manifest)
    assert len(objects) == 1, f"expected one object, kubectl read {len(objects)}"
    return objects[0]


def kubectl_read_all(kubectl: Path, manifest: str) -> list[dict[str, Any]]:
    """Every object of a YAML stream as kubectl decodes it (Lists are expanded into their items)."""
    done = subprocess.run(
        [str(kubectl), "label", "--local", "-f", "-", "-o", "json", "dra-migrate.io/read=yes"],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"kubectl could not read the manifest: {done.stderr.strip()}\n{manifest}")
    decoder = json.JSONDecoder()
    objects: list[dict[str, Any]] = []
    text, position = done.stdout, 0
    while text[position:].strip():
        obj, end = decoder.raw_decode(text, len(text) - len(text[position:].lstrip()))
        objects.append(obj)
        position = end
    return objects
