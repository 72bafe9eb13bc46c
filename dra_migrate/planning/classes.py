"""The DeviceClasses the plan's own step creates (KEP-5004 extendedResourceName), and the configuration a
conversion has once they exist: from that step on the webhook reads them from the cluster, so the plan
decides every workload's path with them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dra_migrate.engine import (
    EXTENDED_RESOURCE_GATE,
    Config,
    DeviceRequestSpec,
    build_device_class,
    convert,
    serving_classes,
    with_served_classes,
)


def classes_to_write(names: Iterable[str], served: Iterable[str], config: Config) -> list[dict[str, Any]]:
    """A DeviceClass with extendedResourceName for every mapped name in `names` that no class serves yet.
    A name that means a share or a MIG device on some nodes resolves to no device request, so no class is
    written for it: KEP-5004 would hand out the whole devices of that class there."""
    if not config.target.feature_enabled(EXTENDED_RESOURCE_GATE):
        return []  # the release drops extendedResourceName unless its alpha gate is on (plan warns)
    out = []
    for name in sorted(set(names) - set(served)):
        spec = config.mappings.resolve(name)
        if not isinstance(spec, DeviceRequestSpec):
            continue  # unmapped, or shared: no class means it
        written = convert(build_device_class(spec), config)
        if written.object is not None and not written.has_errors:
            out.append(written.object)
    return out


def with_written_classes(config: Config, written: list[dict[str, Any]]) -> Config:
    """`config` once the written classes exist (they serve names no cluster class serves)."""
    return with_served_classes(config, {name: classes[0] for name, classes in serving_classes(written).items()})


def names_served(classes: Iterable[dict[str, Any]]) -> set[str]:
    """The extended resource names the classes map."""
    return set(serving_classes(list(classes)))


def class_entries(classes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """`clusterDeviceClasses` entries of the configuration file for DeviceClasses with extendedResourceName."""
    out = []
    for name, serving in sorted(serving_classes(list(classes)).items()):
        entry: dict[str, Any] = {"name": serving[0].name, "extendedResourceName": name}
        if serving[0].selectors:
            entry["selectors"] = list(serving[0].selectors)
        out.append(entry)
    return out
