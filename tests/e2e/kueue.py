"""Kueue's CustomResourceDefinitions from its released Go module (the module proxy), cached.

The e2e cluster gets the ClusterQueue and ResourceFlavor CRDs of the release the planning code
reads its field names from (sigs.k8s.io/kueue, apis/config/v1beta2), not hand-written copies.
"""

from __future__ import annotations

import io
import os
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import yaml

from .binaries import cache_root

KUEUE_MODULE = "sigs.k8s.io/kueue"
KUEUE_VERSION = "v0.17.0"
_CRDS = ("kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_resourceflavors.yaml")


def _proxy() -> str:
    first = (os.environ.get("GOPROXY") or "https://proxy.golang.org").split(",")[0].split("|")[0]
    return first if first.startswith("http") else "https://proxy.golang.org"


def module_zip() -> Path:
    """The module's zip, downloaded once into the cache."""
    path = cache_root() / f"kueue-{KUEUE_VERSION}.zip"
    if not path.exists():
        url = f"{_proxy()}/{KUEUE_MODULE}/@v/{KUEUE_VERSION}.zip"
        with urllib.request.urlopen(url, timeout=120) as answer:
            data = answer.read()
        zipfile.ZipFile(io.BytesIO(data)).testzip()
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(path)
    return path


def crds() -> list[dict[str, Any]]:
    with zipfile.ZipFile(module_zip()) as archive:
        prefix = f"{KUEUE_MODULE}@{KUEUE_VERSION}/config/components/crd/bases/"
        return [yaml.safe_load(archive.read(prefix + name)) for name in _CRDS]
