"""A GPU ResourceQuota keeps limiting once pods use claims, but only with the converted quota.

The quota system charges device-plugin requests to `requests.nvidia.com/gpu` and ResourceClaims to
`gpu.nvidia.com.deviceclass.resource.k8s.io/devices`. With the quota as written for the device
plugin, any number of claims gets in; with the quota the translator converted, the second claim
is refused at admission, by the real apiserver with the resourcequota controller running.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from polling import wait_for

from .cluster_fixtures import Kube

QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpus
spec:
  hard:
    requests.nvidia.com/gpu: "1"   # one GPU for the whole namespace
"""


def _claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    }


def _apply_quota(kube: Kube, namespace: str, text: str) -> Mapping[str, Any]:
    quota = yaml.safe_load(text)
    kube.create(quota, namespace=namespace)

    def computed() -> Mapping[str, Any] | None:  # quota admission refuses until the controller has run
        current = kube.get("v1", "ResourceQuota", quota["metadata"]["name"], namespace)
        hard = (current or {}).get("status", {}).get("hard") or {}
        return current if set(hard) == set(quota["spec"]["hard"]) else None

    return wait_for(computed, timeout=60, what="ResourceQuota status")


def _admitted(kube: Kube, namespace: str, count: int) -> int:
    admitted = 0
    for index in range(count):
        try:
            kube.create(_claim(f"gpu-{index}"), namespace=namespace)
        except ApiException as exc:
            assert exc.status == 403 and "exceeded quota" in str(exc.body), exc.body
            continue
        admitted += 1
    return admitted


def _converted(tmp_path: Path) -> str:
    source = tmp_path / "quota.yaml"
    source.write_text(QUOTA)
    done = subprocess.run(
        [sys.executable, "-m", "dra_migrate.cli", "convert", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.usefixtures("fake_cluster")
def test_claims_bypass_the_device_plugin_quota(kube: Kube, namespace: str) -> None:
    _apply_quota(kube, namespace, QUOTA)
    assert _admitted(kube, namespace, 3) == 3


@pytest.mark.usefixtures("fake_cluster")
def test_the_converted_quota_limits_claims(kube: Kube, namespace: str, tmp_path: Path) -> None:
    converted = _converted(tmp_path)
    assert "# one GPU for the whole namespace" in converted
    assert 'gpu.nvidia.com.deviceclass.resource.k8s.io/devices: "1"' in converted
    _apply_quota(kube, namespace, converted)
    assert _admitted(kube, namespace, 3) == 1
