"""What a Pod must look like before the engine sees it: the types of the fields it reads, and limits.

kube-apiserver decodes every Pod into its typed struct before admission, so the fields the engine
reads always have their schema types there (tests/webhook checks this table against the Pod
OpenAPI schema). A review with other types was sent by something else, straight to /mutate:
it is denied with code 400 and the first wrong field, never with a traceback.

The apiserver sets no count limit on containers, resource entries or claims (none in the core
validation of 1.34 to 1.37); its limits are sizes: 3 MiB per request, 1.5 MiB per object in etcd.
The webhook's own limit comes from DRA: kube-scheduler turns a pod's extended resources into one
ResourceClaim with one device request per container and resource (KEP-5004), and a claim holds at
most 32 requests (DeviceRequestsMaxSize). A pod with more mapped (container, resource) requests than
that is denied with code 422 before any conversion work, and so is a pod listing more than
MAX_RESOURCE_ENTRIES resource names (counted before any is looked up), so a review's work stays
small and bounded.

A mirror pod (annotation `kubernetes.io/config.mirror`) is the kubelet's API copy of a static pod
from a manifest on its node: it must stay what that manifest says (the kubelet recreates a mirror
pod that differs, and the apiserver refuses one converted to claims), and a template made for it
would be left behind. It passes untouched, with a warning when it asks for mapped devices: the
manifest on the node is what to convert (`dra-migrate convert`).

`metadata.managedFields` is the one part of a Pod the apiserver passes through free-form (FieldsV1
may nest hundreds of levels deep). Nothing here reads it, so it is set aside before conversion; the
patch never touches it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dra_migrate.engine import (
    ALL_CONTAINERS,
    REQUESTING_CONTAINERS,
    Config,
    DeviceRequestSpec,
    QuantityError,
    device_count,
    pod_containers,
    resource_maps,
)

MAX_MAPPED_REQUESTS = 32  # DeviceRequestsMaxSize: device requests in one ResourceClaim
# Resource names across a pod's containers (limits and requests), counted before any is looked up: an
# unknown name costs a pass over the mapping patterns, and a pod of 55,000 names (2.9 MB, within the
# apiserver's request size) cost 0.9 s of CPU. Real pods list a handful per container.
MAX_RESOURCE_ENTRIES = 1024


@dataclass(frozen=True, slots=True)
class PodProblem:
    code: int
    message: str


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Shape


@dataclass(frozen=True, slots=True)
class MapOf:
    value: Shape


# A leaf is a tuple of accepted JSON types; an object is a dict of the fields that are checked.
Shape = tuple[type, ...] | dict[str, "Shape"] | ListOf | MapOf

STRING: tuple[type, ...] = (str,)
# Quantities arrive as strings from the apiserver; plain JSON numbers are read as well.
QUANTITY: tuple[type, ...] = (str, int, float)

RESOURCES: dict[str, Shape] = {
    "limits": MapOf(QUANTITY),
    "requests": MapOf(QUANTITY),
    "claims": ListOf({"name": STRING, "request": STRING}),
}
CONTAINER: dict[str, Shape] = {
    "name": STRING,
    "restartPolicy": STRING,
    "resources": RESOURCES,
    "env": ListOf({"name": STRING, "valueFrom": {"resourceFieldRef": {"resource": STRING}}}),
}
NODE_SELECTOR_TERM: dict[str, Shape] = {
    "matchFields": ListOf({"key": STRING, "operator": STRING, "values": ListOf(STRING)}),
}
POD: dict[str, Shape] = {
    "apiVersion": STRING,
    "kind": STRING,
    "metadata": {
        "name": STRING,
        "generateName": STRING,
        "namespace": STRING,
        "labels": MapOf(STRING),
        "annotations": MapOf(STRING),
    },
    "spec": {
        "containers": ListOf(CONTAINER),
        "initContainers": ListOf(CONTAINER),
        "ephemeralContainers": ListOf(CONTAINER),
        "resourceClaims": ListOf(
            {
                "name": STRING,
                "resourceClaimName": STRING,
                "resourceClaimTemplateName": STRING,
                "source": {"resourceClaimName": STRING, "resourceClaimTemplateName": STRING},
            }
        ),
        "nodeName": STRING,
        "nodeSelector": MapOf(STRING),
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ListOf(NODE_SELECTOR_TERM)}
            }
        },
    },
}
_JSON_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


class _WrongTypeError(Exception):
    """Raised at the wrong value; each enclosing level adds its part of the path on the way out,
    so a pod that is fine builds no path text at all."""

    def __init__(self, expected: str, value: Any) -> None:
        super().__init__()
        self.expected = expected
        self.value = value
        self.path: list[str] = []

    def __str__(self) -> str:
        path = "".join(self.path).lstrip(".") or "the object"
        return f"{path} must be {self.expected}, not {_describe(self.value)}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return f"{_JSON_NAMES.get(type(value), type(value).__name__)} ({text[:40]}{'...' if len(text) > 40 else ''})"


def _check(value: Any, shape: Shape) -> None:
    """Raise _WrongTypeError for the first value that does not have its shape; null means absent."""
    if value is None:
        return
    if isinstance(shape, tuple):
        # bool is an int in Python, never in JSON.
        if not isinstance(value, shape) or (value.__class__ is bool and bool not in shape):
            raise _WrongTypeError(" or ".join(_JSON_NAMES[t] for t in shape), value)
        return
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            raise _WrongTypeError("a list", value)
        item_shape = shape.item
        if _leaves_fine(value, item_shape):
            return
        for index, item in enumerate(value):
            _within(item, item_shape, f"[{index}]")
        return
    if isinstance(shape, MapOf):
        if not isinstance(value, dict):
            raise _WrongTypeError("an object", value)
        value_shape = shape.value
        if _leaves_fine(value.values(), value_shape):
            return
        for key, item in value.items():
            _within(item, value_shape, f"[{key!r}]")
        return
    if not isinstance(value, dict):
        raise _WrongTypeError("an object", value)
    for key, field_shape in shape.items():
        if key in value:
            _within(value[key], field_shape, f".{key}")


def _leaves_fine(values: Iterable[Any], shape: Shape) -> bool:
    """The common case in one pass: `shape` is a leaf and every value has one of its types (or is null)."""
    if not isinstance(shape, tuple):
        return False
    with_bool = bool in shape
    return all(v is None or (isinstance(v, shape) and (with_bool or v.__class__ is not bool)) for v in values)


def _within(value: Any, shape: Shape, step: str) -> None:
    try:
        _check(value, shape)
    except _WrongTypeError as wrong:
        wrong.path.insert(0, step)
        raise


def shape_problem(pod: Mapping[str, Any]) -> PodProblem | None:
    try:
        _check(pod, POD)
    except _WrongTypeError as wrong:
        return PodProblem(400, f"dra-migrate: not a Pod as kube-apiserver sends it: {wrong}")
    return None


def _resource_maps(
    pod: Mapping[str, Any], kinds: tuple[str, ...]
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]]:
    """(container, limits, requests) for each container of the given kinds (shape already checked)."""
    for _, _, container in pod_containers(pod.get("spec") or {}, kinds):
        limits, requests = resource_maps(container)
        yield container, limits, requests


def mapped_requests(pod: Mapping[str, Any], config: Config) -> list[str]:
    """`<container>: <resource>` for each container and mapped resource it asks for (shape already checked)."""
    found: list[str] = []
    for container, limits, requests in _resource_maps(pod, REQUESTING_CONTAINERS):
        found += [
            f"{container.get('name')}: {name}"
            for name in sorted({*limits, *requests})
            if isinstance(config.mappings.resolve(name), DeviceRequestSpec)
            and not (_zero(limits.get(name, 0)) and _zero(requests.get(name, 0)))
        ]
    return found


def _zero(value: Any) -> bool:
    """A count of no devices (nothing to convert); a value that is no count is left to the engine's check."""
    try:
        return device_count(value) == 0
    except QuantityError:
        return False


def _resource_entries(pod: Mapping[str, Any]) -> int:
    return sum(len(limits) + len(requests) for _, limits, requests in _resource_maps(pod, ALL_CONTAINERS))


def limit_problem(pod: Mapping[str, Any], config: Config) -> PodProblem | None:
    entries = _resource_entries(pod)
    if entries > MAX_RESOURCE_ENTRIES:
        return PodProblem(
            422,
            f"dra-migrate: the pod lists {entries} resource names across its containers; at most "
            f"{MAX_RESOURCE_ENTRIES} are reviewed. List fewer, or label the pod dra-migrate.io/skip=true",
        )
    requests = mapped_requests(pod, config)
    if len(requests) <= MAX_MAPPED_REQUESTS:
        return None
    shown = ", ".join(requests[:3])
    return PodProblem(
        422,
        f"dra-migrate: the pod asks for {len(requests)} device-plugin resources across its containers "
        f"({shown}, ...); at most {MAX_MAPPED_REQUESTS} are converted per pod, the number of device requests "
        "one ResourceClaim can hold. Ask for fewer, or label the pod dra-migrate.io/skip=true",
    )


def mirror_pod_warning(pod: Mapping[str, Any], config: Config) -> str | None:
    """The warning for a mirror pod that asks for devices the configuration maps, or None."""
    requests = mapped_requests(pod, config)
    if not requests:
        return None
    node = (pod.get("spec") or {}).get("nodeName") or "its node"
    return (
        f"dra-migrate warning: mirror pod of a static pod left unconverted ({', '.join(requests[:3])}"
        f"{', ...' if len(requests) > 3 else ''}): the apiserver refuses a converted mirror pod; convert the "
        f"static pod's manifest on {node} instead (dra-migrate convert)"
    )


def without_managed_fields(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod minus metadata.managedFields (a shallow copy when there are any)."""
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return pod
    return {**pod, "metadata": {key: value for key, value in metadata.items() if key != "managedFields"}}
