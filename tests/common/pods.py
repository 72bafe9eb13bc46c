"""Pod manifests for the tests of every part (engine, translator, webhook, e2e): one builder.

Containers run the pause image, so the same pod is valid for the engine, for an AdmissionReview and
for a real kube-apiserver (which checks an image is named, not that it exists)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
GPU = "nvidia.com/gpu"


def gpu(count: Any, resource: str = GPU) -> Obj:
    """A resources map asking for `count` of `resource` (the value kept as given: 2, "2", "1500m")."""
    return {resource: count}


def container(
    name: str = "main",
    limits: Mapping[str, Any] | None = None,
    requests: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Obj:
    out: Obj = {"name": name, "image": PAUSE_IMAGE}
    resources: Obj = {}
    if limits is not None:
        resources["limits"] = dict(limits)
    if requests is not None:
        resources["requests"] = dict(requests)
    if resources:
        out["resources"] = resources
    out.update(extra)
    return out


def sidecar(name: str, limits: Mapping[str, Any] | None = None, **extra: Any) -> Obj:
    """A restartable init container (KEP-753)."""
    return container(name, limits, restartPolicy="Always", **extra)


def pod(spec: Obj, name: str = "p", namespace: str | None = None, labels: Mapping[str, str] | None = None) -> Obj:
    """A Pod around `spec`; without a namespace in its metadata, as kube-apiserver sends a review's
    object when the creator left it out and as `kubectl create -n` expects it."""
    metadata: Obj = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod_of(
    containers: list[Obj],
    init: list[Obj] | None = None,
    *,
    name: str = "p",
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> Obj:
    body: Obj = {"containers": containers, **spec}
    if init is not None:
        body["initContainers"] = init
    return pod(body, name, namespace, labels)


def pause_pod(name: str, *, resources: Obj | None = None, labels: Mapping[str, str] | None = None, **spec: Any) -> Obj:
    """One container, `resources` when given, other keyword arguments merged into the spec; no grace
    period, so that deleting it on a real control plane is immediate."""
    main = container()
    if resources is not None:
        main["resources"] = resources
    return pod_of([main], name=name, labels=labels, terminationGracePeriodSeconds=0, **spec)


def gpu_pod(
    name: str = "trainer",
    count: Any = 1,
    resource: str = GPU,
    *,
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A pod whose one container asks the device plugin for `count` of `resource` in its limits."""
    return pause_pod(name, resources={"limits": gpu(count, resource)}, labels=labels, **spec)
