"""The plan as one self-contained HTML page (no scripts, no external files): a table per pool and a
bar chart of devices by stack, to attach to a change ticket."""

from __future__ import annotations

from html import escape

from dra_migrate.planning.model import Plan, Pool

_STYLE = (
    "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "th,td{border:1px solid #bbb;padding:.3em .6em;text-align:left;vertical-align:top}th{background:#eee}"
    ".error{color:#b00}.warning{color:#a60}.blocked{color:#b00}.claims{color:#06a}.kep-5004{color:#070}"
)
STACK_COLOURS = {"device-plugin": "#d98c1f", "dra": "#2f7ed8"}


def _chart(pools: list[Pool]) -> str:
    """Horizontal bars: physical devices per pool, by stack."""
    rows = [(p.name, p.gpus.get("device-plugin", 0), p.gpus.get("dra", 0)) for p in pools if p.gpus]
    if not rows:
        return "<p>No devices found.</p>"
    largest = max(a + b for _, a, b in rows) or 1
    width, bar, gap, label = 480, 18, 8, 180
    height = len(rows) * (bar + gap) + 30
    parts = [f'<svg role="img" aria-label="devices by stack" width="{label + width + 80}" height="{height}">']
    for index, (name, plugin, dra) in enumerate(rows):
        y = index * (bar + gap)
        plugin_width, dra_width = width * plugin / largest, width * dra / largest
        parts.append(f'<text x="0" y="{y + 13}" font-size="12">{escape(name)}</text>')
        parts.append(
            f'<rect x="{label}" y="{y}" width="{plugin_width:.1f}" height="{bar}" '
            f'fill="{STACK_COLOURS["device-plugin"]}"/>'
        )
        parts.append(
            f'<rect x="{label + plugin_width:.1f}" y="{y}" width="{dra_width:.1f}" height="{bar}" '
            f'fill="{STACK_COLOURS["dra"]}"/>'
        )
        parts.append(
            f'<text x="{label + plugin_width + dra_width + 6:.1f}" y="{y + 13}" font-size="12">{plugin} / {dra}</text>'
        )
    legend_y = len(rows) * (bar + gap) + 14
    key = '<rect x="{x}" y="{y}" width="10" height="10" fill="{fill}"/>'
    parts.append(key.format(x=label, y=legend_y - 10, fill=STACK_COLOURS["device-plugin"]))
    parts.append(f'<text x="{label + 14}" y="{legend_y}" font-size="12">device plugin</text>')
    parts.append(key.format(x=label + 120, y=legend_y - 10, fill=STACK_COLOURS["dra"]))
    parts.append(f'<text x="{label + 134}" y="{legend_y}" font-size="12">DRA</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(plan: Plan) -> str:
    e = escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>DRA migration plan: {e(plan.cluster)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>DRA migration plan</h1><p>Cluster {e(plan.cluster)}, Kubernetes {e(plan.server_version or 'unknown')}, "
        f"planned for {e(plan.target)}.</p>",
    ]
    out += [f'<p class="error">Error: {e(m)}</p>' for m in plan.errors]
    out += [f'<p class="warning">Warning: {e(m)}</p>' for m in plan.warnings]
    out.append("<h2>Devices by stack</h2>" + _chart(plan.pools))
    for pool in plan.pools:
        out.append(f"<h2>Pool {e(pool.name)}: {e(pool.stack)}</h2>")
        workloads = [w for w in plan.workloads if pool.name in w.pools]
        rows = [
            ["nodes", e(", ".join(pool.nodes))],
            ["device plugin", e(", ".join(f"{k}: {v}" for k, v in sorted(pool.device_plugin.items())) or "-")],
            ["DRA devices", e(", ".join(f"{k}: {v}" for k, v in sorted(pool.dra.items())) or "-")],
            [
                "sharing",
                e(
                    "; ".join(
                        f"{s.advertised}: {s.strategy}, {s.replicas} replicas, on {len(s.nodes)} node(s); "
                        f"in DRA: {s.dra}"
                        for s in pool.sharing
                    )
                    or "none"
                ),
            ],
            ["MIG single", e(", ".join(f"{n}: {p}" for n, p in sorted(pool.mig_single.items())) or "none")],
            ["served both ways", e(", ".join(pool.both) or "none")],
            ["workloads", e(", ".join(f"{w.kind} {w.namespace}/{w.name}: {w.path}" for w in workloads) or "none")],
        ]
        out.append(_table(["", pool.name], rows))
    out.append("<h2>Workloads</h2>")
    out.append(
        _table(
            ["path", "workload", "requests", "pools", "why"],
            [
                [
                    f'<span class="{e(w.path)}">{e(w.path)}</span>',
                    e(f"{w.kind} {w.namespace}/{w.name}"),
                    e(", ".join(f"{k}: {v}" for k, v in w.requests.items())),
                    e(", ".join(w.pools)),
                    "<br>".join(e(r) for r in w.reasons),
                ]
                for w in plan.workloads
            ],
        )
    )
    out.append("<h2>Quotas</h2>")
    out.append(
        _table(
            ["object", "device keys", "after the cutover"],
            [
                [
                    e(f"{q.kind} {_where(q.namespace, q.name)}"),
                    e(", ".join(q.keys)),
                    "<br>".join(e(p) for p in q.problems),
                ]
                for q in plan.quotas
            ],
        )
    )
    out.append("<h2>DeviceClasses with extendedResourceName</h2>")
    out.append(
        _table(
            ["DeviceClass", "extendedResourceName", "chosen by the scheduler"],
            [
                [
                    e(m.device_class),
                    e(m.extended_resource_name),
                    "yes" if m.serves else "no: another class serves the name",
                ]
                for m in plan.device_classes
            ]
            + [
                [e(c["metadata"]["name"]), e(c["spec"]["extendedResourceName"]), "yes: written by the plan"]
                for c in plan.new_classes
            ],
        )
        if plan.device_classes or plan.new_classes
        else "<p>None.</p>"
    )
    if plan.unmapped:
        out.append(f"<p>Names workloads use that no class maps: {e(', '.join(plan.unmapped))}</p>")
    if plan.kueue is not None:
        mappings = plan.kueue["resources"]["deviceClassMappings"]
        out.append(
            f"<h2>Kueue</h2><p>Add {len(mappings)} deviceClassMappings to its configuration, then restart it.</p>"
        )
        out.append(
            _table(
                ["resource", "DeviceClasses"],
                [[e(m["name"]), e(", ".join(m["deviceClassNames"]))] for m in mappings],
            )
        )
    if plan.webhooks:
        out.append(f"<h2>Other mutating webhooks that see pods</h2><p>{e(', '.join(plan.webhooks))}</p>")
    out.append("<h2>Cutover</h2><ol>")
    out += [
        f"<li><b>{e(s.pool)}</b>: {e(s.action)}<br><i>check:</i> {e(s.check)}"
        + (f"<br><i>undo:</i> {e(s.undo)}" if s.undo else "")
        + "</li>"
        for s in plan.steps
    ]
    if not plan.steps:
        out.append("<li>nothing to move</li>")
    out.append("</ol></body></html>")
    return "\n".join(out) + "\n"


def _where(namespace: str, name: str) -> str:
    """`ns/name`, or the name of a cluster-scoped object (a ClusterQueue)."""
    return f"{namespace}/{name}" if namespace else name
