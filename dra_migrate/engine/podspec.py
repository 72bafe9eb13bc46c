"""Device-plugin requests in one pod spec -> DRA claims (docs/dra-api.md section 5, "Translator implications").

How the device count is kept (the invariant: a converted pod never needs more devices than before).
Under the device plugin a pod needs, per resource, max(largest non-sidecar init container plus the
sidecars started before it, sum over app and sidecar containers): init containers run one at a time
and their devices are handed on to later containers. DRA claims live as long as the pod, so one
claim per container would add the init containers' devices on top. Instead:

* every long-running container (app, or sidecar = init container with restartPolicy Always) gets its
  own claim of exactly its count;
* a non-sidecar init container reuses claims of containers that are not running yet while it runs
  (app containers, sidecars started after it, and claims made for earlier init containers), choosing
  claims that add up to exactly its count when possible, else the smallest set that covers it;
* only when those claims together hold fewer devices than it needs does it get a claim of its own,
  for the difference, which later init containers may reuse in turn.

So the pod's claims add up to exactly the device-plugin need, per (class, selectors, config).

A pod is never split between the device plugin and DRA for one DeviceClass: when a container must
keep a mapped resource (a HAMi vGPU share, an invalid count), the pod's other requests of that
class stay too, because no node serves one device both ways (KEP-5004, docs/dra-api.md section 5).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dra_migrate.engine.config import Config
from dra_migrate.engine.containers import REQUESTING_CONTAINERS, pod_containers, resource_maps
from dra_migrate.engine.deviceclasses import serving_class
from dra_migrate.engine.findings import Findings, PathParts, json_path
from dra_migrate.engine.mapping import (
    IMPLICIT_DEVICE_CLASS_PREFIX,
    DeviceRequestSpec,
    Unconvertible,
    is_extended_resource,
)
from dra_migrate.engine.names import TakenLabels, unique_label
from dra_migrate.engine.quantity import QuantityError, describe, device_count, is_placeholder
from dra_migrate.engine.result import Conversion
from dra_migrate.engine.strategy import Path, Route, Strategy, decide
from dra_migrate.engine.templates import build_template

MAX_DEVICES_PER_CLAIM = 32  # allocator limit per claim (docs/dra-api.md section 4, "Size limits")


# The records below are plain classes: creating dataclasses at import would cost the translator's
# start about a millisecond each (their methods are compiled from generated source).


class ContainerRef:
    __slots__ = ("claim_names", "container", "init", "sidecar", "where")

    def __init__(self, where: PathParts, container: dict[str, Any], init: bool, sidecar: bool) -> None:
        self.where = where  # relative to the pod spec: ("containers", 0), or ("pytorch",) for a KServe model container
        self.container = container
        self.init = init
        self.sidecar = sidecar
        # Whole-claim entries of resources.claims, collected on first use: adding n claims stays linear.
        self.claim_names: set[object] | None = None

    @property
    def name(self) -> str:
        return str(self.container.get("name") or "-".join(str(p) for p in self.where))

    @property
    def long_running(self) -> bool:
        return not self.init or self.sidecar


class DeviceNeed:
    __slots__ = ("count", "ref", "resource", "spec")

    def __init__(self, ref: ContainerRef, resource: str, count: int, spec: DeviceRequestSpec) -> None:
        self.ref = ref
        self.resource = resource
        self.count = count
        self.spec = spec


class PodClaim:
    __slots__ = ("count", "name", "template")

    def __init__(self, name: str, template: str, count: int) -> None:
        self.name = name
        self.template = template
        self.count = count


class PodConversion:
    """What converting one pod spec produced, for the caller to merge into its result."""

    __slots__ = ("changed", "conversions", "extended", "templates")

    def __init__(self) -> None:
        self.templates: dict[str, dict[str, Any]] = {}
        self.changed = False
        # Names left to KEP-5004 by the migration strategy, with their mapping.
        self.extended: dict[str, DeviceRequestSpec] = {}
        self.conversions: list[Conversion] = []


def _containers(pod_spec: dict[str, Any], container_fields: tuple[str, ...]) -> list[ContainerRef]:
    refs: list[ContainerRef] = []
    for kind, index, container in pod_containers(pod_spec, REQUESTING_CONTAINERS):
        init = kind == "initContainers"
        refs.append(ContainerRef((kind, index), container, init, init and container.get("restartPolicy") == "Always"))
    # Pod-spec-like CRDs (KServe predictors) also hold one container per model format key.
    refs.extend(
        ContainerRef((field_name,), pod_spec[field_name], init=False, sidecar=False)
        for field_name in container_fields
        if isinstance(pod_spec.get(field_name), dict)
    )
    return refs


def resource_entries(pod_spec: Any, container_fields: tuple[str, ...] = ()) -> Iterator[tuple[PathParts, str, str]]:
    """(container path within the pod spec, "limits"|"requests", resource name) for every entry."""
    if not isinstance(pod_spec, dict):
        return
    for ref in _containers(pod_spec, container_fields):
        limits, requests = resource_maps(ref.container)
        for section, values in (("limits", limits), ("requests", requests)):
            for name in values:
                yield ref.where, section, str(name)


class PodNeeds:
    __slots__ = ("convert", "extended", "kept", "routes")

    def __init__(self) -> None:
        self.convert: list[DeviceNeed] = []
        # DeviceClass -> "container: resource" that stays on the device plugin (companion or bad count).
        self.kept: dict[str, list[str]] = {}
        # Resource name -> the path the migration strategy chose for it in this pod spec.
        self.routes: dict[str, Route] = {}
        # Names left to KEP-5004, with their mapping (the DeviceClasses a caller may have to write).
        self.extended: dict[str, DeviceRequestSpec] = {}


def _route(
    name: str,
    spec: DeviceRequestSpec,
    pinned: bool,
    config: Config,
    path: str,
    needs: PodNeeds,
    findings: Findings,
    other_devices: bool = False,
) -> Route:
    """The strategy's path for `name`, decided and reported once per pod spec. `other_devices`: on the nodes
    the pod can land on, the name means other devices than it means elsewhere (a share, a MIG device)."""
    route = needs.routes.get(name)
    if route is None:
        serving = config.served.get(name) or (serving_class(spec) if config.emits_device_classes else None)
        if other_devices and (serving is not None or config.strategy is Strategy.EXTENDED_RESOURCE):
            # KEP-5004 allocates the devices of the class that serves the name, which these nodes do not
            # publish (a GPU in MIG mode publishes only its MIG devices): the pod would stay Pending. With
            # no class yet, the one a user would write for the name serves it elsewhere, not here.
            serves = f"DeviceClass {serving.name!r} serves it as" if serving else "a class for the name would serve"
            route = Route(
                Path.CLAIM,
                f"on the nodes this pod can land on {name} is not what {serves}, so KEP-5004 cannot serve it "
                f"there; a claim of {spec.device_class_name} can",
            )
        else:
            route = decide(name, spec, pinned, config.strategy, config.target, serving)
        needs.routes[name] = route
        findings.info("migration-path", path, f"{name} -> {route.path}: {route.reason}")
        if route.warning:
            findings.warning(
                "extended-resource-unserved", path, f"{name} kept as an extended resource, but {route.warning}"
            )
    return route


def _for_pod(
    mapping: DeviceRequestSpec | Unconvertible | None, pod_spec: dict[str, Any]
) -> DeviceRequestSpec | Unconvertible | None:
    """A name the cluster shares converts as usual for a pod whose nodeSelector, nodeName or required node
    affinity rules the sharing nodes out, and to a share of a device for one that can land only there (where
    the driver publishes shares)."""
    shared = mapping.shared if isinstance(mapping, Unconvertible) else None
    if shared is not None:
        return shared.for_pod(pod_spec) or mapping
    return mapping


def _other(mapping: DeviceRequestSpec | Unconvertible | None, chosen: DeviceRequestSpec) -> bool:
    """Whether `chosen` is what a shared name means on some nodes (a share, a MIG device), not its usual
    conversion."""
    shared = mapping.shared if isinstance(mapping, Unconvertible) else None
    return shared is not None and chosen is not shared.otherwise


def _collect_needs(
    refs: list[ContainerRef], pod_spec: dict[str, Any], config: Config, base: PathParts, findings: Findings
) -> PodNeeds:
    needs = PodNeeds()
    pinned = bool(pod_spec.get("nodeName"))
    for ref in refs:
        limits, requests = resource_maps(ref.container)
        where = (*base, *ref.where, "resources")
        names = sorted({str(k) for k in (*limits, *requests)})
        raw = {name: config.mappings.resolve(name) for name in names}
        resolved = {name: _for_pod(raw[name], pod_spec) for name in names}
        kept_back = {
            kept
            for name, mapping in resolved.items()
            if isinstance(mapping, Unconvertible)
            for kept in mapping.keeps_unconverted
        }
        for name in names:
            if not is_extended_resource(name):
                continue
            section = "limits" if name in limits else "requests"
            path = json_path(*where, section, name)
            mapping = resolved[name]
            if name.startswith(IMPLICIT_DEVICE_CLASS_PREFIX):
                findings.info("extended-resource-dra", path, f"{name} is already served by DRA (KEP-5004); kept")
                continue
            if mapping is None:
                findings.warning(
                    "unmapped-resource",
                    path,
                    f"container {ref.name!r}: {name} has no DRA mapping and stays a device-plugin request; "
                    "add a mapping to the config file to convert it",
                )
                continue
            if isinstance(mapping, Unconvertible):
                message = f"container {ref.name!r}: {name} kept: {mapping.reason}"
                if mapping.shared is not None:
                    findings.error("shared-device", path, message)
                else:
                    findings.warning("unconvertible-resource", path, message)
                continue
            if name in kept_back:
                findings.warning(
                    "resource-kept-with-companion",
                    path,
                    f"container {ref.name!r}: {name} kept because the container also requests a resource that "
                    "qualifies it (for example a vGPU memory or core share)",
                )
                needs.kept.setdefault(mapping.device_class_name, []).append(f"{ref.name}: {name}")
                continue
            count = _count(ref, name, limits, requests, where, findings)
            if count is not None and count > 1 and mapping.capacity:
                findings.error(
                    "shared-device",
                    path,
                    f"container {ref.name!r}: {name} kept: {count} shares of a shared device, which the device "
                    "plugin may hand out from one device or several; a claim for one share means 1",
                )
                count = None
            if count is None:
                needs.kept.setdefault(mapping.device_class_name, []).append(f"{ref.name}: {name}")
            elif (
                count
                and _route(name, mapping, pinned, config, path, needs, findings, _other(raw[name], mapping)).path
                is Path.CLAIM
            ):
                needs.convert.append(DeviceNeed(ref, name, count, mapping))
            elif count:
                needs.extended[name] = mapping
    return needs


def _keep_pod_on_device_plugin(needs: PodNeeds, base: PathParts, findings: Findings) -> list[DeviceNeed]:
    """Drop conversions of a DeviceClass that some container of the pod keeps on the device plugin.

    A node must not serve one device both through a device plugin and DRA (KEP-5004), so a pod
    needing both kinds of the same device could not be scheduled anywhere during a migration.
    """
    kept_needs = [n for n in needs.convert if n.spec.device_class_name in needs.kept]
    for need in kept_needs:
        findings.warning(
            "pod-kept-on-device-plugin",
            json_path(*base, *need.ref.where, "resources"),
            f"container {need.ref.name!r}: {need.resource} kept: the pod also keeps "
            f"{', '.join(needs.kept[need.spec.device_class_name])} on the device plugin, and one pod cannot use "
            f"DeviceClass {need.spec.device_class_name!r} both ways",
        )
    return [n for n in needs.convert if n not in kept_needs]


def _count(
    ref: ContainerRef,
    name: str,
    limits: Mapping[str, Any],
    requests: Mapping[str, Any],
    where: PathParts,
    findings: Findings,
) -> int | None:
    """The device count, or None (with an error finding) when the quantities cannot be converted."""
    values = {}
    for section, source in (("limits", limits), ("requests", requests)):
        if name in source and is_placeholder(source[name]):
            findings.warning(
                "template-placeholder",
                json_path(*where, section, name),
                f"container {ref.name!r}: {name}: {describe(source[name])} is an unrendered template value, so "
                "this file looks like a template (Helm, envsubst, kustomize replacements): render it and convert "
                "the output; left as is",
            )
            return None
        if name in source:
            try:
                values[section] = device_count(source[name])
            except QuantityError as exc:
                findings.error(
                    "invalid-device-count",
                    json_path(*where, section, name),
                    f"container {ref.name!r}: {name}: {exc}; left unconverted",
                )
                return None
    path = json_path(*where, "limits" if "limits" in values else "requests", name)
    if len(set(values.values())) > 1:
        findings.error(
            "requests-limits-differ",
            path,
            f"container {ref.name!r}: {name} requests {values['requests']} but limits {values['limits']}; "
            "extended resources cannot be overcommitted, so requests must equal limits; left unconverted",
        )
        return None
    count = next(iter(values.values()))
    if count > MAX_DEVICES_PER_CLAIM:
        findings.error(
            "too-many-devices",
            path,
            f"container {ref.name!r}: {name}: {count} devices exceed the {MAX_DEVICES_PER_CLAIM}-device limit "
            "of one ResourceClaim; left unconverted",
        )
        return None
    return count


def _best_subset(pool: list[PodClaim], need: int) -> list[PodClaim]:
    """Claims adding up to exactly `need` (fewest claims), else the smallest total above it.

    Subset sum by dynamic programming over totals: a pool holds at most a few dozen claims of at
    most 32 devices each, so the table stays small.
    """
    best: dict[int, tuple[PodClaim, ...]] = {0: ()}
    for claim in pool:
        for total, chosen in list(best.items()):
            grown = total + claim.count
            if grown not in best or len(best[grown]) > len(chosen) + 1:
                best[grown] = (*chosen, claim)
    reachable = sorted(t for t in best if t >= need)
    return list(best[reachable[0]]) if reachable else list(pool)


def _add_container_claim(ref: ContainerRef, claim_name: str) -> None:
    resources = ref.container.setdefault("resources", {})
    claims = resources.get("claims")
    if not isinstance(claims, list):  # absent or `claims: null`
        claims = resources["claims"] = []
    if ref.claim_names is None:
        ref.claim_names = {c.get("name") for c in claims if isinstance(c, dict) and not c.get("request")} - {None}
    if claim_name not in ref.claim_names:
        ref.claim_names.add(claim_name)
        claims.append({"name": claim_name})


def _remove_resource(container: dict[str, Any], name: str) -> None:
    resources = container["resources"]
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, dict) and name in values:
            del values[name]
            if not values:
                del resources[section]


def convert_pod_spec(
    pod_spec: dict[str, Any],
    base: PathParts,
    namespace: str | None,
    config: Config,
    findings: Findings,
    container_fields: tuple[str, ...] = (),
) -> PodConversion:
    """Convert `pod_spec` in place (the caller owns a copy) and return the templates it now references."""
    out = PodConversion()
    refs = _containers(pod_spec, container_fields)
    collected = _collect_needs(refs, pod_spec, config, base, findings)
    out.extended = collected.extended
    needs = _keep_pod_on_device_plugin(collected, base, findings)
    if not needs:
        return out
    existing = pod_spec.get("resourceClaims")
    pod_claims: list[dict[str, Any]] = existing if isinstance(existing, list) else []
    taken = TakenLabels(str(c.get("name")) for c in pod_claims if isinstance(c, dict))

    def new_claim(owner: ContainerRef, need: DeviceNeed, count: int) -> PodClaim:
        template = build_template(need.spec, count, namespace)
        name = template["metadata"]["name"]
        out.templates.setdefault(name, template)
        claim = PodClaim(unique_label(f"{owner.name}-{need.spec.request_name}", taken), name, count)
        taken.add(claim.name)
        pod_claims.append({"name": claim.name, "resourceClaimTemplateName": name})
        return claim

    position = {id(ref.container): order for order, ref in enumerate(refs)}
    groups: dict[object, list[DeviceNeed]] = {}
    for need in needs:  # one pass: identity() serializes the spec
        groups.setdefault(need.spec.identity(), []).append(need)
    for group in groups.values():
        # Keyed by need, not container: one container may ask for two resource names of one identity.
        owned: dict[int, PodClaim] = {}
        for need in sorted((n for n in group if n.ref.long_running), key=lambda n: position[id(n.ref.container)]):
            owned[id(need)] = claim = new_claim(need.ref, need, need.count)
            out.conversions.append(_attach(need, [claim], findings, base))
        extras: list[PodClaim] = []
        for need in (n for n in group if not n.ref.long_running):
            here = position[id(need.ref.container)]
            # Sidecars started before this init container still hold their devices while it runs.
            pool = [
                claim
                for other in group
                if other.ref.long_running and not (other.ref.sidecar and position[id(other.ref.container)] < here)
                for claim in [owned[id(other)]]
            ] + extras
            chosen = _best_subset(pool, need.count) if sum(c.count for c in pool) >= need.count else pool
            shortfall = need.count - sum(c.count for c in chosen)
            if shortfall > 0:
                extra = new_claim(need.ref, need, shortfall)
                extras.append(extra)
                chosen = [*chosen, extra]
            out.conversions.append(_attach(need, chosen, findings, base))
    if pod_claims and pod_spec.get("resourceClaims") is not pod_claims:  # absent or `resourceClaims: null`
        pod_spec["resourceClaims"] = pod_claims
    out.changed = True
    return out


def _attach(need: DeviceNeed, claims: Iterable[PodClaim], findings: Findings, base: PathParts) -> Conversion:
    claims = list(claims)
    for claim in claims:
        _add_container_claim(need.ref, claim.name)
    _remove_resource(need.ref.container, need.resource)
    visible = sum(c.count for c in claims)
    path = json_path(*base, *need.ref.where, "resources")
    names = ", ".join(f"{c.name} ({c.template})" for c in claims)
    findings.info(
        "device-plugin-to-claim",
        path,
        f"container {need.ref.name!r}: {need.resource}: {need.count} -> claim {names}",
    )
    if visible > need.count:
        findings.warning(
            "init-container-sees-more",
            path,
            f"init container {need.ref.name!r} asked for {need.count} {need.resource} and shares claims of later "
            f"containers holding {visible}; it can see all {visible} devices while it runs",
        )
    return Conversion(
        path, need.ref.name, need.resource, need.count, need.spec.device_class_name, tuple(c.name for c in claims)
    )
