"""A scrape of a running server, checked as Prometheus and Grafana would read it.

The real server (gunicorn over TLS, two workers, multiprocess metrics) answers reviews, applies a
watch event and meets a failing Kubernetes API; then its /metrics text must pass `promtool check
metrics`, and every metric the alerts (deploy/monitoring/prometheusrule.yaml) and the dashboard
(deploy/monitoring/dashboard.json) query must be in it. The dashboard's queries are valid PromQL
(promtool parses them) and the dashboard holds together as a Grafana dashboard.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission import make_review
from fakekube import FakeKubeServer
from monitoring import (
    PROMETHEUS_RULE,
    as_promql,
    dashboard_queries,
    load_dashboard,
    metric_names,
    require_promtool,
    run_promtool,
)
from pods import gpu_pod
from polling import wait_until
from prometheus_client.parser import text_string_to_metric_families
from webhook_support import ServerProcess, watching

GRID_COLUMNS = 24


@pytest.fixture(scope="module")
def promtool() -> Path:
    return require_promtool()


def _exposed(text: str) -> set[str]:
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


@pytest.fixture(scope="module")
def scrape(tls_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """/metrics of a server that has patched a pod, applied a watch event and failed a review on
    an unreachable API."""
    work = tmp_path_factory.mktemp("scrape")
    with FakeKubeServer() as api:
        server = ServerProcess(tls_dir=tls_dir, work_dir=work, kubeconfig=api.write_kubeconfig(work / "kubeconfig"))
        try:
            server.wait_ready()
            watching(api.fake, "namespaces", "resourceclaimtemplates")
            assert server.review(make_review(gpu_pod(), namespace="team-a"))["allowed"]
            api.fake.add_namespace("team-b")
            api.fake.fail_status, api.fake.fail_message = 503, "etcd leader changed"
            refused = server.review(make_review(gpu_pod(), namespace="team-b"))
            assert not refused["allowed"] and refused["status"]["code"] == 503
            api.fake.fail_status = None

            def text() -> str:
                return str(server.session.get(f"{server.url}/metrics", timeout=10).text)

            wait_until(lambda: "dra_migrate_webhook_watch_events_total" in text(), 10.0, "the watch event counted")
            yield text()
        finally:
            server.stop()


def test_the_scrape_passes_promtool_check_metrics(scrape: str, promtool: Path) -> None:
    run_promtool(promtool, "check", "metrics", stdin=scrape)
    exposed = _exposed(scrape)
    assert {
        "dra_migrate_webhook_reviews_total",
        "dra_migrate_webhook_api_errors_total",
        "dra_migrate_webhook_watch_alive_timestamp_seconds",
    } <= exposed


def test_every_metric_the_alerts_query_is_exposed(scrape: str) -> None:
    exposed = _exposed(scrape)
    rule = yaml.safe_load(PROMETHEUS_RULE.read_text())
    for group in rule["spec"]["groups"]:
        for alert in group["rules"]:
            names = metric_names(alert["expr"])
            assert names, f"{alert['alert']}: no metric in {alert['expr']!r}"
            assert names <= exposed, f"{alert['alert']} queries {sorted(names - exposed)}, not in the scrape"


def test_every_dashboard_query_is_promql_on_exposed_metrics(scrape: str, promtool: Path, tmp_path: Path) -> None:
    exposed = _exposed(scrape)
    queries = list(dashboard_queries(load_dashboard()))
    assert len(queries) >= 10
    for where, query in queries:
        names = metric_names(as_promql(query))
        assert names, f"{where}: no metric in {query!r}"
        assert names <= exposed, f"{where} queries {sorted(names - exposed)}, not in the scrape"
    # promtool parses each query as Prometheus would (as recording rules of a throwaway file)
    rules = [{"record": f"dashboard:query_{i}", "expr": as_promql(query)} for i, (_, query) in enumerate(queries)]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    run_promtool(promtool, "check", "rules", str(path))


def _overlap(a: dict[str, int], b: dict[str, int]) -> bool:
    across = a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
    return across and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    """What Grafana needs to import it through the sidecar and draw it: an identity, panels with
    unique ids laid on the 24-column grid without overlap, each query on the chosen Prometheus data
    source, and every $variable the queries use defined."""
    dashboard = load_dashboard()
    assert isinstance(dashboard["title"], str) and dashboard["title"]
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert "id" not in dashboard  # an id belongs to one Grafana's database; provisioning sets it
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    panels: list[dict[str, Any]] = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) and grid[k] >= 0 for k in "xywh"), panel["title"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= GRID_COLUMNS, panel["title"]
        assert panel["type"] in {"timeseries", "stat"} and panel["datasource"] == {
            "type": "prometheus",
            "uid": "${datasource}",
        }
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(set(refs)) == len(refs), panel["title"]
        assert all(t["datasource"] == panel["datasource"] for t in panel["targets"]), panel["title"]
    for i, a in enumerate(panels):
        for b in panels[i + 1 :]:
            assert not _overlap(a["gridPos"], b["gridPos"]), (a["title"], b["title"])
    used = {
        name
        for _, query in dashboard_queries(dashboard)
        for name in re.findall(r"\$(\w+)", query)
        if not name.startswith("__")
    }
    assert used <= set(variables), sorted(used - set(variables))
