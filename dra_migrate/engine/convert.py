"""The engine's entry point: one object in, its DRA form plus templates and findings out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_migrate.engine import hami, trainer
from dra_migrate.engine.config import Config
from dra_migrate.engine.containers import pod_containers
from dra_migrate.engine.deviceclasses import serving_class
from dra_migrate.engine.dra.writers import write_hub
from dra_migrate.engine.findings import Finding, Findings, PathParts, json_path
from dra_migrate.engine.helmhooks import hook_annotations, hook_templates
from dra_migrate.engine.invalid import check_pod_spec
from dra_migrate.engine.legacy_pod import flatten_claim_sources
from dra_migrate.engine.mapping import DeviceRequestSpec, is_extended_resource
from dra_migrate.engine.nodename import convert_node_name
from dra_migrate.engine.plain import plain_copy
from dra_migrate.engine.podspec import convert_pod_spec
from dra_migrate.engine.quota import convert_quota, report_kueue_cluster_queue, report_limit_range
from dra_migrate.engine.ray import CLUSTER_SPECS as RAY_KINDS
from dra_migrate.engine.ray import keep_ray_resources
from dra_migrate.engine.result import Conversion, ConversionResult
from dra_migrate.engine.serverless import ALTERNATIVES, knative_reason, undeclared_mode
from dra_migrate.engine.severity import Severity
from dra_migrate.engine.strategy import Path, decide
from dra_migrate.engine.strategy import Route as Decision
from dra_migrate.engine.tolerations import keep_resource_tolerations
from dra_migrate.engine.triggers import (
    CLAIM_FIELDS,
    CONTAINER_CLAIMS,
    NODE_NAME,
    RESOURCE_SECTIONS,
    Route,
    route_for,
)
from dra_migrate.engine.unknown import report_unknown_kind
from dra_migrate.engine.workloads import api_group


def convert(obj: Mapping[str, Any], config: Config) -> ConversionResult:
    """Convert one object. Never raises for odd input: what cannot be converted is left as is and reported."""
    result = _convert(obj, config)
    result.source = obj
    return result


def _convert(obj: Mapping[str, Any], config: Config) -> ConversionResult:
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        return ConversionResult(object=dict(obj) if isinstance(obj, Mapping) else None, changed=False)
    where = route_for(obj.get("apiVersion"), obj["kind"], config)
    if where is Route.LIST and isinstance(obj.get("items"), list):
        return _convert_list(obj, config)
    if where is Route.DRA:
        from dra_migrate.engine.dra.convert import convert_dra_object  # its readers only for DRA objects

        findings = Findings()
        converted, changed = convert_dra_object(obj, config.target, findings)
        return ConversionResult(converted, changed, [], findings.items)
    if where is Route.QUOTA:
        return _convert_quota(obj, config)
    workload = config.workloads.lookup(obj) if where is Route.WORKLOAD else None
    if workload is None:
        unknown = report_unknown_kind(obj, api_group(obj.get("apiVersion")), config.mappings)
        return ConversionResult(obj, False, [], unknown)
    if workload.unsupported:
        return _report_unsupported(obj, workload.unsupported, config)
    result = _convert_workload(obj, config)
    if result.conversions and workload.api_group == "argoproj.io":
        result.findings.append(
            Finding(
                Severity.WARNING,
                "argo-resource-claims",
                "spec",
                "template resourceClaims need Argo Workflows 4.1 or later: an older controller drops the field and "
                "the step's pod runs without its devices",
            )
        )
    return _through_knative(obj, result, workload.api_group) if result.conversions else result


def _through_knative(obj: dict[str, Any], result: ConversionResult, group: str) -> ConversionResult:
    """A workload Knative Serving runs cannot take claims: refused, left as is (engine/serverless.py)."""
    reason = knative_reason(obj, group)
    if reason is None:
        if undeclared_mode(obj, group):
            result.findings.append(
                Finding(
                    Severity.WARNING,
                    "serverless-mode-unknown",
                    "metadata.annotations",
                    "this InferenceService names no deployment mode, so the cluster's inferenceservice-config "
                    "decides: in Serverless mode Knative refuses the claims it now has; set "
                    "serving.kserve.io/deploymentMode: RawDeployment, or see docs/conversion.md on Knative Serving",
                )
            )
        return result
    findings = [f for f in result.findings if f.severity is not Severity.INFO]
    findings.extend(
        Finding(Severity.ERROR, "serverless-claims", c.path, f"{reason}: {ALTERNATIVES}") for c in result.conversions
    )
    return ConversionResult(obj, False, [], findings, result.extended)


def _convert_quota(obj: dict[str, Any], config: Config) -> ConversionResult:
    if obj.get("kind") == "LimitRange":
        return ConversionResult(obj, False, [], report_limit_range(obj, config.mappings))
    if obj.get("kind") == "ClusterQueue":

        def kept(spec: DeviceRequestSpec) -> bool:
            return _route(spec, config).path is Path.EXTENDED_RESOURCE

        return ConversionResult(obj, False, [], report_kueue_cluster_queue(obj, config.mappings, kept))
    served: set[str] = set()
    if config.target.feature_enabled("DRAExtendedResource"):  # claims are charged to requests.<name> too
        served = set(config.served) | (set(config.mappings.exact_names()) if config.emits_device_classes else set())
    converted, findings = convert_quota(obj, config.mappings, served)
    return ConversionResult(converted or obj, converted is not None, [], findings)


def _namespace(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) and namespace else None


def _needs_work(pod_spec: dict[str, Any], container_fields: tuple[str, ...]) -> bool:
    """Read-only pre-check, so the common workload without devices is not copied at all.

    The fields read here are the engine's text triggers (dra_migrate/engine/triggers.py).
    """
    if pod_spec.get(NODE_NAME) or any(name in pod_spec for name in CLAIM_FIELDS):
        return True
    for _, _, container in pod_containers(pod_spec):
        resources = container.get("resources")
        if isinstance(resources, dict):
            for section in RESOURCE_SECTIONS:
                values = resources.get(section)
                if isinstance(values, dict) and any(is_extended_resource(str(name)) for name in values):
                    return True
            if resources.get(CONTAINER_CLAIMS):
                return True
        if any(isinstance(env, dict) and "valueFrom" in env for env in container.get("env") or ()):
            return True
    return any(isinstance(pod_spec.get(name), dict) for name in container_fields)


def _convert_workload(obj: dict[str, Any], config: Config) -> ConversionResult:
    container_fields = config.workloads.container_fields(obj)
    if not any(_needs_work(pod_spec, container_fields) for _, pod_spec in config.workloads.pod_specs(obj)):
        return ConversionResult(obj, False)
    out = plain_copy(obj)
    findings = Findings()
    templates: dict[str, dict[str, Any]] = {}
    extended: dict[str, DeviceRequestSpec] = {}
    conversions: list[Conversion] = []
    changed = False
    namespace = _namespace(obj)
    for path, pod_spec in config.workloads.pod_specs(out):
        check_pod_spec(pod_spec, path, findings)
        changed |= flatten_claim_sources(pod_spec, path, findings)
        pod_config = _with_pod_selectors(config, _pod_annotations(out, path), path, findings)
        converted = convert_pod_spec(pod_spec, path, namespace, pod_config, findings, container_fields)
        templates.update(converted.templates)
        extended.update(converted.extended)
        conversions.extend(converted.conversions)
        changed |= converted.changed
        if converted.conversions:
            _check_scheduler(obj, pod_spec, path, findings)
        if converted.conversions and config.resource_tolerations:
            resources = (c.resource for c in converted.conversions)
            changed |= keep_resource_tolerations(pod_spec, resources, path, findings)
        changed |= convert_node_name(pod_spec, path, config.node_name, findings)
        if converted.changed and not config.target.feature_enabled("DynamicResourceAllocation"):
            findings.warning(
                "dra-gate-off",
                json_path(*path, "resourceClaims"),
                f"DynamicResourceAllocation is off by default in {config.target}: without it the apiserver "
                "silently drops spec.resourceClaims and resources.claims",
            )
    if not changed:
        return ConversionResult(obj, False, [], findings.items, list(extended.values()))
    if obj.get("kind") in RAY_KINDS and api_group(obj.get("apiVersion")) == "ray.io":
        keep_ray_resources(obj, out, findings)
    if obj.get("kind") in trainer.KINDS and api_group(obj.get("apiVersion")) == trainer.GROUP:
        trainer.keep_trainer_process_counts(obj, out, findings)
        if obj.get("kind") == "ClusterTrainingRuntime" and templates:
            trainer.cluster_runtime_templates(list(templates.values()), findings)
    # Templates are built in the hub form (v1); write them in the version the target serves.
    written = [write_hub(t, "ResourceClaimTemplate", config.target) for t in templates.values()]
    if hook_annotations(obj) is not None:  # a Helm hook's templates are hooks before it
        written = hook_templates(obj, out, (spec for _, spec in config.workloads.pod_specs(out)), written)
    return ConversionResult(out, True, written, findings.items, list(extended.values()), conversions)


def _pod_annotations(obj: dict[str, Any], path: PathParts) -> dict[str, Any]:
    """The annotations of the pod a pod spec at `path` makes: the object's own for a Pod, else those
    of the template holding the spec (its sibling `metadata`)."""
    holder: Any = obj
    for part in path[:-1]:
        if isinstance(holder, dict) and isinstance(part, str):
            holder = holder.get(part)
        elif isinstance(holder, list) and isinstance(part, int) and part < len(holder):
            holder = holder[part]
        else:
            return {}
    metadata = holder.get("metadata") if isinstance(holder, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _with_pod_selectors(config: Config, annotations: dict[str, Any], path: PathParts, findings: Findings) -> Config:
    """HAMi's device-selection annotations as CEL selectors on the pod's GPU requests (engine/hami.py)."""
    if not annotations:
        return config
    where = json_path(*path[:-1], "metadata", "annotations") if len(path) > 1 else "metadata.annotations"
    for name in hami.policies(annotations):
        findings.warning(
            "hami-policy",
            where,
            f"{name}: DRA has no equivalent of HAMi's node/GPU scheduling policy (binpack, spread); the "
            "scheduler picks among the devices that match",
        )
    selected = hami.selectors(annotations)
    if not selected:
        return config
    for annotation, selector in selected:
        findings.info("hami-selector", where, f"{annotation} -> CEL selector on {hami.GPU_CLASS} devices: {selector}")
    extra = tuple(selector for _, selector in selected)
    return config._replace(mappings=config.mappings.with_selectors(hami.GPU_CLASS, extra))


def _check_scheduler(obj: dict[str, Any], pod_spec: dict[str, Any], path: PathParts, findings: Findings) -> None:
    """Claims are allocated by the scheduler that binds the pod: another one must support DRA."""
    spec = obj.get("spec")
    job_level = spec.get("schedulerName") if isinstance(spec, dict) else None  # a Volcano Job's own field
    name = pod_spec.get("schedulerName") or job_level
    if isinstance(name, str) and name not in ("", "default-scheduler"):
        findings.warning(
            "custom-scheduler",
            json_path(*path, "schedulerName"),
            f"schedulerName {name!r}: the pod's claims are allocated by the scheduler that binds it, so {name} "
            "must allocate ResourceClaims (DRA) for it to start; if it places pods by the extended resource "
            "(an extender, a quota plugin), it will not see these devices",
        )


def _convert_list(obj: dict[str, Any], config: Config) -> ConversionResult:
    items: list[Any] = []
    templates: dict[tuple[str | None, str], dict[str, Any]] = {}
    findings: list[Finding] = []
    extended: dict[str, DeviceRequestSpec] = {}
    conversions: list[Conversion] = []
    changed = False
    for index, item in enumerate(obj["items"]):
        result = convert(item, config)
        prefix = f"items[{index}]"
        findings.extend(
            Finding(f.severity, f.rule, f"{prefix}.{f.path}" if f.path else prefix, f.message) for f in result.findings
        )
        conversions.extend(c.under(prefix) for c in result.conversions)
        for template in result.templates:
            templates.setdefault((_namespace(template), template["metadata"]["name"]), template)
        extended.update((spec.resource, spec) for spec in result.extended)
        changed |= result.changed
        if result.object is not None:
            items.append(result.object)
        elif not isinstance(item, dict):  # not an object (a string, a null): not the engine's to drop
            items.append(item)
    if not changed:
        return ConversionResult(obj, False, [], findings, list(extended.values()))
    items_result = {**obj, "items": items}
    return ConversionResult(
        items_result, True, list(templates.values()), findings, list(extended.values()), conversions
    )


def _route(spec: DeviceRequestSpec, config: Config) -> Decision:
    """The migration strategy's decision for a request that needs nothing DRA-only (engine/strategy.py)."""
    serving = config.served.get(spec.resource) or (serving_class(spec) if config.emits_device_classes else None)
    return decide(spec.resource, spec, False, config.strategy, config.target, serving)


def _report_unsupported(obj: dict[str, Any], reason: str, config: Config) -> ConversionResult:
    """Kinds we cannot rewrite (no pod spec to hold claims): say where device requests are, and
    which of them KEP-5004 serves with no change at all."""
    findings = Findings()
    extended: dict[str, DeviceRequestSpec] = {}
    for path, resources in _find_resource_maps(obj):
        for section in RESOURCE_SECTIONS:
            values = resources.get(section)
            if not isinstance(values, dict):
                continue
            for name in values:
                spec = config.mappings.resolve(str(name)) if is_extended_resource(str(name)) else None
                if spec is None:
                    continue
                where = json_path(*path, section, str(name))
                if isinstance(spec, DeviceRequestSpec):
                    route = _route(spec, config)
                    if route.path is Path.EXTENDED_RESOURCE and route.warning is None:
                        findings.info("migration-path", where, f"{name} -> {route.path}: {route.reason}")
                        extended[spec.resource] = spec
                        continue
                findings.warning("unsupported-kind", where, f"{obj.get('kind')}: {name} not converted: {reason}")
    return ConversionResult(obj, False, [], findings.items, list(extended.values()))


def _find_resource_maps(
    node: Any, path: tuple[str | int, ...] = ()
) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    found: list[tuple[tuple[str | int, ...], dict[str, Any]]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("resources", "resourcesPerNode") and isinstance(value, dict):
                found.append(((*path, key), value))
            else:
                found.extend(_find_resource_maps(value, (*path, str(key))))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_find_resource_maps(value, (*path, index)))
    return found
