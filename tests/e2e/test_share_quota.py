"""What limits shares after the move, as `plan` says it, on the real quota system of the control plane.

A time-sliced pool (4 shares per GPU) moves with --consumable-shares: its pods' requests become claims
for one share of a `gpu.nvidia.com` device. The namespace's quota allowed 2 shares through
`requests.nvidia.com/gpu`. The plan's quota text says what limits share claims, and `--write` writes the
converted quota; the test applies that quota, creates share claims as the plan's webhook configuration
converts them, one more than the quota allows (with the quota as written, or as it is where the plan
converts none), and reads what kube-apiserver's quota admission refused
and what kube-controller-manager's quota controller counted:

- while `gpu.nvidia.com` maps no extended resource name, each share claim counts one
  `gpu.nvidia.com.deviceclass.resource.k8s.io/devices` and nothing of `requests.nvidia.com/gpu`;
- once it maps `nvidia.com/gpu` (spec.extendedResourceName), each also counts one `requests.nvidia.com/gpu`
  (kubernetes pkg/quota/v1/evaluator/core/resource_claims.go, addExtendedResourceQuota; gate
  DRAExtendedResource).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from polling import wait_for

from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.cluster.state import ClusterState
from dra_migrate.engine import EXTENDED_RESOURCE_GATE, Target

from .cluster_fixtures import RESOURCE_API, Kube, create_namespace, delete_namespace, ensure_device_classes

DRIVER_CLASS = "gpu.nvidia.com"
DEVICES_KEY = f"{DRIVER_CLASS}.deviceclass.resource.k8s.io/devices"
GPU_KEY = "requests.nvidia.com/gpu"
ALLOWED = 2  # shares the namespace's quota allows
TIME_SLICED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"


def _dra_migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_migrate", *args], capture_output=True, text=True, timeout=300, check=False
    )


def _cluster(namespace: str, driver_class: dict[str, Any]) -> list[dict[str, Any]]:
    """A time-sliced pool under the device plugin's Helm chart, and the namespace's quota of shares."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ts-0", "labels": {"pool": "ts"}},
        "status": {"allocatable": {"nvidia.com/gpu": "16"}},
    }
    plugin = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": "nvidia"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}
                    ],
                    "volumes": [{"name": "available-configs", "configMap": {"name": "nvdp-configs"}}],
                }
            }
        },
    }
    configs = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvdp-configs", "namespace": "nvidia"},
        "data": {"default": TIME_SLICED},
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "shares", "namespace": namespace},
        "spec": {"hard": {GPU_KEY: str(ALLOWED)}},
    }
    return [node, plugin, configs, quota, driver_class]


def _share_pod(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "notebook", "namespace": namespace},
        "spec": {
            "nodeSelector": {"pool": "ts"},
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {"nvidia.com/gpu": 1}}}
            ],
        },
    }


def _plan(tmp_path: Path, target: Target, objects: list[dict[str, Any]]) -> tuple[dict[str, Any], Path]:
    state = ClusterState(server_version=f"v{target}.0", api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add(objects)
    write_snapshot(state, tmp_path / "cluster")
    out = tmp_path / "out"
    planned = _dra_migrate(
        "plan", "--cluster", str(tmp_path / "cluster"), "--pool-label", "pool", "--consumable-shares",
        "--report", "json", "--write", str(out),
    )  # fmt: skip
    assert planned.stdout, planned.stderr
    return json.loads(planned.stdout), out


def _share_claim_spec(out: Path, tmp_path: Path, namespace: str) -> dict[str, Any]:
    """The claim a share pod gets, as the plan's webhook configuration converts it."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(_share_pod(namespace)))
    converted = _dra_migrate("convert", "--config", str(out / "webhook-config.yaml"), str(pod))
    assert converted.returncode == 0, converted.stderr
    (template,) = [d for d in yaml.safe_load_all(converted.stdout) if d and d["kind"] == "ResourceClaimTemplate"]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == DRIVER_CLASS and request["exactly"]["capacity"]
    spec: dict[str, Any] = template["spec"]["spec"]
    return spec


def _apply_quota(kube: Kube, quota: dict[str, Any], namespace: str) -> dict[str, Any]:
    assert quota["metadata"]["namespace"] == namespace
    kube.create(quota, namespace=namespace)

    def computed() -> dict[str, Any] | None:  # quota admission refuses until the controller has run
        current = kube.get("v1", "ResourceQuota", quota["metadata"]["name"], namespace)
        hard = ((current or {}).get("status") or {}).get("hard") or {}
        return current if set(hard) == set(quota["spec"]["hard"]) else None

    return wait_for(computed, timeout=60, what="the ResourceQuota's status")


def _create_claims(kube: Kube, namespace: str, spec: dict[str, Any], count: int) -> list[str]:
    """Create `count` share claims; the refusals' messages, in order."""
    refused = []
    for index in range(count):
        claim = {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceClaim",
            "metadata": {"name": f"share-{index}"},
            "spec": spec,
        }
        try:
            kube.create(claim, namespace=namespace)
        except ApiException as exc:
            assert exc.status == 403 and "exceeded quota" in str(exc.body), exc.body
            refused.append(str(json.loads(str(exc.body))["message"]))
    return refused


def _used(kube: Kube, namespace: str, wanted: dict[str, str]) -> dict[str, str]:
    """The quota controller's count, once it reached `wanted`."""

    def counted() -> dict[str, str] | None:
        quota = kube.get("v1", "ResourceQuota", "shares", namespace) or {}
        used = (quota.get("status") or {}).get("used") or {}
        return used if all(used.get(k) == v for k, v in wanted.items()) else None

    return wait_for(counted, timeout=60, what=f"quota usage {wanted}")


@pytest.fixture
def share_namespace(kube: Kube, target: Target) -> Iterator[str]:
    for gate in ("DRAConsumableCapacity", EXTENDED_RESOURCE_GATE):
        if not target.feature_enabled(gate):
            pytest.skip(f"{gate} is off by default in {target}: no share claims, or no class-mapped quota")
    ensure_device_classes(kube)
    name = create_namespace(kube, "sharequota")
    try:
        yield name
    finally:
        delete_namespace(kube, name)


def test_share_claims_are_limited_by_the_per_class_key_only(
    kube: Kube, target: Target, share_namespace: str, tmp_path: Path
) -> None:
    driver_class = kube.get(RESOURCE_API, "DeviceClass", DRIVER_CLASS)
    assert driver_class is not None and not driver_class["spec"].get("extendedResourceName")
    plan, out = _plan(tmp_path, target, _cluster(share_namespace, driver_class))
    (quota,) = plan["quotas"]
    (note,) = [p for p in quota["problems"] if p.startswith(f"{GPU_KEY}:")]
    assert f"each share claim counts 1 of {DEVICES_KEY}" in note and f"{GPU_KEY} no longer limits them" in note
    (written,) = [q for q in yaml.safe_load_all((out / "quotas.yaml").read_text()) if q]
    assert written["spec"]["hard"] == {GPU_KEY: str(ALLOWED), DEVICES_KEY: str(ALLOWED)}
    _apply_quota(kube, written, share_namespace)
    refused = _create_claims(kube, share_namespace, _share_claim_spec(out, tmp_path, share_namespace), ALLOWED + 1)
    assert len(refused) == 1 and DEVICES_KEY in refused[0] and GPU_KEY not in refused[0], refused
    used = _used(kube, share_namespace, {DEVICES_KEY: str(ALLOWED)})
    assert used.get(GPU_KEY, "0") == "0", used  # the claims count nothing there: it no longer limits them


def test_share_claims_count_against_the_name_their_class_maps(
    kube: Kube, target: Target, share_namespace: str, tmp_path: Path
) -> None:
    """`gpu.nvidia.com` with extendedResourceName nvidia.com/gpu: the plan says the quota keeps limiting
    shares one for one, and the real quota counts each share claim once in requests.nvidia.com/gpu."""
    original = kube.get(RESOURCE_API, "DeviceClass", DRIVER_CLASS)
    assert original is not None
    kube.patch(RESOURCE_API, "DeviceClass", DRIVER_CLASS, {"spec": {"extendedResourceName": "nvidia.com/gpu"}})
    try:
        mapped = kube.get(RESOURCE_API, "DeviceClass", DRIVER_CLASS)
        assert mapped is not None and mapped["spec"]["extendedResourceName"] == "nvidia.com/gpu"
        objects = _cluster(share_namespace, mapped)
        plan, out = _plan(tmp_path, target, objects)
        (quota,) = plan["quotas"]
        (note,) = [p for p in quota["problems"] if p.startswith(f"{GPU_KEY}:")]
        assert f"and 1 of {GPU_KEY}" in note and "keeps limiting shares one for one" in note
        # the quota as it is already limits the class's claims: the plan converts nothing and writes no quota
        assert quota["converted"] is None and not (out / "quotas.yaml").exists()
        _apply_quota(kube, next(o for o in objects if o["kind"] == "ResourceQuota"), share_namespace)
        spec = _share_claim_spec(out, tmp_path, share_namespace)
        refused = _create_claims(kube, share_namespace, spec, ALLOWED + 1)
        assert len(refused) == 1 and GPU_KEY.removeprefix("requests.") in refused[0], refused
        _used(kube, share_namespace, {GPU_KEY: str(ALLOWED)})
    finally:
        kube.patch(RESOURCE_API, "DeviceClass", DRIVER_CLASS, {"spec": {"extendedResourceName": None}})
