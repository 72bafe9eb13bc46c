"""DeviceClasses that map extended resource names for KEP-5004 (docs/dra-api.md section 5).

One class per extended resource name, so a repository can hold everything the cluster needs for
`nvidia.com/gpu: 2` to be served from DRA with no pod change: the class selects the mapping's
devices (its class selectors, plus the request's own selectors, such as a MIG profile, so each
profile gets a class of its own) and carries the mapping's opaque config.
"""

from __future__ import annotations

import re
from typing import Any

from dra_migrate.engine.mapping import DeviceRequestSpec
from dra_migrate.engine.names import short_hash
from dra_migrate.engine.strategy import ServingClass
from dra_migrate.engine.templates import MANAGED_BY_LABEL, MANAGED_BY_VALUE

_SUBDOMAIN_MAX = 253


def device_class_name(resource: str) -> str:
    """`nvidia.com/gpu` -> `nvidia.com-gpu`: a DNS subdomain that reads as the name it serves."""
    name = re.sub(r"[^a-z0-9.-]+", "-", resource.lower().replace("/", "-"))
    name = re.sub(r"\.{2,}", ".", name)
    name = ".".join(part.strip("-") for part in name.split(".") if part.strip("-")) or "devices"
    if name != resource.replace("/", "-") or len(name) > _SUBDOMAIN_MAX:
        # Characters were replaced: keep distinct resource names distinct.
        name = f"{name[: _SUBDOMAIN_MAX - 9].rstrip('.-')}-{short_hash(resource)}"
    return name


def class_selectors(spec: DeviceRequestSpec) -> tuple[str, ...]:
    own = spec.class_selectors or (f'device.driver == "{spec.device_class_name}"',)
    return (*own, *spec.selectors)


def serving_class(spec: DeviceRequestSpec) -> ServingClass:
    """The class `build_device_class` writes, as the strategy sees it."""
    return ServingClass(device_class_name(spec.resource), class_selectors(spec), spec.config)


def build_device_class(spec: DeviceRequestSpec) -> dict[str, Any]:
    """The DeviceClass (hub form, resource.k8s.io/v1) serving `spec.resource` through KEP-5004."""
    body: dict[str, Any] = {"selectors": [{"cel": {"expression": cel}} for cel in class_selectors(spec)]}
    if spec.config:
        body["config"] = [{"opaque": config.as_dict()} for config in spec.config]
    body["extendedResourceName"] = spec.resource
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": device_class_name(spec.resource), "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE}},
        "spec": body,
    }
