"""The plan as text, for a terminal."""

from __future__ import annotations

from dra_migrate.planning.model import Plan


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(values.items())) or "-"


def render_text(plan: Plan) -> str:
    lines = [
        f"cluster {plan.cluster}: Kubernetes {plan.server_version or 'unknown'}; plan for {plan.target}; "
        f"resource.k8s.io {', '.join(plan.resource_api) or 'not served'}",
    ]
    for error in plan.errors:
        lines.append(f"error: {error}")
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    lines.append("")
    lines.append("Node pools")
    for pool in plan.pools:
        lines.append(f"  {pool.name}: {len(pool.nodes)} node(s), stack {pool.stack}")
        lines.append(f"    device plugin: {_counts(pool.device_plugin)}; DRA devices: {_counts(pool.dra)}")
        for share in pool.sharing:
            lines.append(
                f"    shares {share.advertised}: {share.strategy}, {share.replicas} replicas, "
                f"on {len(share.nodes)} node(s)"
            )
            lines.append(f"      in DRA: {share.dra}")
        if pool.both:
            lines.append(f"    served both ways: {', '.join(pool.both)}")
    lines.append("")
    lines.append("DeviceClasses with extendedResourceName")
    for mapping in plan.device_classes:
        chosen = "" if mapping.serves else " (not chosen: another class serves the name)"
        lines.append(f"  {mapping.device_class} -> {mapping.extended_resource_name}{chosen}")
    for written in plan.new_classes:
        name = written["metadata"]["name"]
        lines.append(f"  {name} -> {written['spec']['extendedResourceName']} (written by the plan: deviceclasses.yaml)")
    if not plan.device_classes and not plan.new_classes:
        lines.append("  none")
    if plan.unmapped:
        lines.append(f"  names workloads use that no class maps: {', '.join(plan.unmapped)}")
    lines.append("")
    counts = plan.workload_counts()
    lines.append("Workloads: " + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none request devices"))
    for workload in plan.workloads:
        requests = ", ".join(f"{k}: {v}" for k, v in workload.requests.items())
        where = f" on {', '.join(workload.pools)}" if workload.pools else ""
        lines.append(f"  {workload.path:9} {workload.kind} {workload.namespace}/{workload.name} ({requests}){where}")
        for reason in workload.reasons[:3]:
            lines.append(f"            {reason}")
    if plan.quotas:
        lines.append("")
        lines.append("Quotas")
        for quota in plan.quotas:
            where = f"{quota.namespace}/{quota.name}" if quota.namespace else quota.name
            lines.append(f"  {quota.kind} {where}: {', '.join(quota.keys) or '-'}")
            for problem in quota.problems:
                lines.append(f"    {problem}")
    if plan.kueue is not None:
        mappings = plan.kueue["resources"]["deviceClassMappings"]
        lines.append("")
        lines.append(f"Kueue: add {len(mappings)} deviceClassMappings to its configuration, then restart it")
        for mapping in mappings:
            lines.append(f"  {mapping['name']} -> {', '.join(mapping['deviceClassNames'])}")
    if plan.webhooks:
        lines.append("")
        lines.append(f"Other mutating webhooks that see pods: {', '.join(plan.webhooks)}")
    lines.append("")
    lines.append("Cutover")
    for number, step in enumerate(plan.steps, 1):
        lines.append(f"  {number}. [{step.pool}] {step.action}")
        lines.append(f"     check: {step.check}")
        if step.undo:
            lines.append(f"     undo: {step.undo}")
    if not plan.steps:
        lines.append("  nothing to move")
    return "\n".join(lines) + "\n"
