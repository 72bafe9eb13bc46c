"""What each container of a rendered manifest set can use, per DeviceClass: the check behind
render verification (translator.renders.verify). Pure: objects in, a comparable view and problems out.

A container's devices are its device-plugin limits (mapped to the DeviceClass that serves them) plus
the devices of every claim it names, resolved through the pod's `resourceClaims` to a
ResourceClaimTemplate of the same render. What cannot be resolved (a claim the pod does not declare,
a template the render does not hold) is part of the view as such, so a conversion that leaves a
dangling reference differs from its input, while a reference that was dangling before stays equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dra_migrate.engine import REQUESTING_CONTAINERS, Config, DeviceRequestSpec, pod_containers

ContainerKey = tuple[str, str, str, str, str]  # kind, namespace, name, pod spec path, container
DeviceView = dict[ContainerKey, dict[str, str]]  # container -> DeviceClass (or marker) -> "count via source"


def _templates(objects: Iterable[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in objects:
        if isinstance(obj, dict) and obj.get("kind") == "ResourceClaimTemplate":
            metadata = obj.get("metadata") or {}
            found[(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))] = obj
    return found


def _request_devices(request: Mapping[str, Any]) -> tuple[str, str] | None:
    """(DeviceClass, count) of one request in any served version (v1 `exactly`/`firstAvailable`, flat v1beta1)."""
    exactly = request.get("exactly")
    if isinstance(exactly, Mapping):
        request = exactly
    elif isinstance(request.get("firstAvailable"), list) and request["firstAvailable"]:
        first = request["firstAvailable"][0]
        request = first if isinstance(first, Mapping) else {}
    device_class = request.get("deviceClassName")
    if not device_class:
        return None
    if request.get("allocationMode") == "All":
        return str(device_class), "all"
    return str(device_class), str(request.get("count", 1))


def _template_devices(template: Mapping[str, Any]) -> list[tuple[str, str]]:
    spec = (template.get("spec") or {}).get("spec") or {}
    requests = ((spec.get("devices") or {}).get("requests")) or []
    found = [_request_devices(r) for r in requests if isinstance(r, Mapping)] if isinstance(requests, list) else []
    return [f for f in found if f is not None]


def _total(counts: list[str]) -> str:
    """Counts of one DeviceClass added up ("all" and other words are kept as they are)."""
    if all(c.isdigit() for c in counts):
        return str(sum(int(c) for c in counts))
    return "+".join(counts)


def _plugin_devices(container: Mapping[str, Any], config: Config) -> dict[str, str]:
    out: dict[str, str] = {}
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        return out
    # extended resources are limits (requests, if given, must equal them): either one names the count
    for section in ("requests", "limits"):
        values = resources.get(section)
        for name, quantity in values.items() if isinstance(values, Mapping) else ():
            spec = config.mappings.resolve(str(name))
            if isinstance(spec, DeviceRequestSpec) and str(quantity).strip() not in ("0", ""):
                out[spec.device_class_name] = f"{str(quantity).strip()} via device plugin"
    return out


def _claim_devices(
    container: Mapping[str, Any],
    pod_claims: Mapping[str, Any],
    templates: Mapping[tuple[str, str], Any],
    namespace: str,
) -> dict[str, str]:
    out: dict[str, str] = {}
    counts: dict[str, list[str]] = {}
    resources = container.get("resources") or {}
    claims = resources.get("claims") if isinstance(resources, Mapping) else None
    for claim in claims if isinstance(claims, list) else ():
        name = claim.get("name") if isinstance(claim, Mapping) else None
        entry = pod_claims.get(str(name))
        if entry is None:
            out[f"claim {name}"] = "is not declared by the pod"
            continue
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name:
            out[f"claim {name}"] = f"uses ResourceClaim {entry.get('resourceClaimName')}"
            continue
        template = templates.get((namespace, str(template_name))) or templates.get(("", str(template_name)))
        if template is None:
            elsewhere = sorted(ns or "no namespace" for ns, found in templates if found == str(template_name))
            where = f" in its namespace (only in {', '.join(elsewhere)})" if elsewhere else ""
            out[f"claim {name}"] = f"uses template {template_name}, which the render does not hold{where}"
            continue
        for device_class, number in _template_devices(template):
            counts.setdefault(device_class, []).append(number)
    out.update((device_class, f"{_total(numbers)} via claim") for device_class, numbers in counts.items())
    return out


def _pod_claims(spec: Mapping[str, Any]) -> dict[str, Any]:
    entries = spec.get("resourceClaims")
    return {str(e.get("name")): e for e in entries if isinstance(e, Mapping)} if isinstance(entries, list) else {}


def device_view(objects: list[Any], config: Config) -> DeviceView:
    """Every container of every pod spec in `objects`, with the devices it can use."""
    templates = _templates(objects)
    view: DeviceView = {}
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        for path, spec in config.workloads.pod_specs(obj):
            pod_claims = _pod_claims(spec)
            where = ".".join(str(part) for part in path)
            for _, _, container in pod_containers(spec, REQUESTING_CONTAINERS):
                devices = _plugin_devices(container, config)
                for device_class, source in _claim_devices(container, pod_claims, templates, namespace).items():
                    if device_class in devices and "device plugin" in devices[device_class]:
                        source = f"{devices[device_class]} and {source}"
                    devices[device_class] = source
                key = (str(obj.get("kind")), namespace, str(metadata.get("name")), where, str(container.get("name")))
                view[key] = devices
    return view


def compare(before: DeviceView, after: DeviceView) -> list[str]:
    """How `after` differs, per container: devices gained, lost or changed; served both ways."""
    problems: list[str] = []
    for key in sorted(set(before) | set(after)):
        kind, namespace, name, _, container = key
        where = f"{kind} {namespace + '/' if namespace else ''}{name} container {container}"
        if key not in after:
            problems.append(f"{where}: missing after conversion")
            continue
        old, new = before.get(key, {}), after[key]
        for device_class in sorted(set(old) | set(new)):
            was, now = old.get(device_class), new.get(device_class)
            if device_class.startswith("claim "):
                if now is not None and now != was:
                    problems.append(f"{where}: {device_class} {now}")
            elif now is not None and " and " in now and now != was:
                problems.append(f"{where}: {device_class} is served both by the device plugin and DRA ({now})")
            elif _count(was) != _count(now):
                problems.append(f"{where}: {device_class} was {was or 'none'}, would be {now or 'none'}")
    return problems


def _count(source: str | None) -> str | None:
    """The device count of a source, whichever way it is served ("2 via claim" equals "2 via device plugin")."""
    if source is None:
        return None
    return source.partition(" via ")[0]
