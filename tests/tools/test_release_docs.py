"""docs/kubernetes-releases.md's feature-gate table says what the generated release table says."""

from __future__ import annotations

import re
from pathlib import Path

from dra_migrate.engine import Target

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kubernetes-releases.md"
_STAGES = {"Alpha": "alpha", "Beta": "beta", "GA": "GA", "Deprecated": "deprecated"}


def gate_rows() -> tuple[list[str], dict[str, list[str]]]:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| feature gate |"))
    releases = [cell.strip() for cell in lines[start].strip("|").split("|")][1:]
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return releases, rows


def test_the_gate_table_matches_the_release_table() -> None:
    releases, rows = gate_rows()
    assert releases == ["1.32", "1.33", "1.34", "1.35", "1.36", "1.37"] and len(rows) > 10
    for gate, cells in rows.items():
        for release, cell in zip(releases, cells, strict=True):
            spec = Target.parse(release).release.gate(gate)
            expected = "-" if spec is None else f"{_STAGES[spec.stage]}, {'**on**' if spec.default else 'off'}"
            assert cell == expected, f"the page says {gate} is {cell!r} in {release}; the table says {expected!r}"


def test_the_page_names_the_pinned_kubernetes_versions() -> None:
    text = PAGE.read_text(encoding="utf-8")
    pinned = [Target.parse(release).release.modules[0] for release in gate_rows()[0]]
    assert re.search(r"`k8s.io/kubernetes`\s+" + r",\s+".join(re.escape(v) for v in pinned), text), pinned
