"""Monitoring of the webhook (deploy/monitoring), checked with the real promtool, helm and kustomize.

- the rules, the spec of deploy/monitoring/prometheusrule.yaml, pass `promtool check rules`, and
  their unit tests (prometheusrule.test.yaml) pass `promtool test rules`, each alert firing in one
  evaluation and cleared in a later one;
- the Helm chart (metrics.*.enabled) and the Kustomize component deploy/components/monitoring
  render the same rules and the same dashboard, from the one copy in deploy/monitoring, and a
  ServiceMonitor that scrapes the webhook's Service with the serving certificate's CA;
- the chart renders none of it by default, and refuses a misspelt value.

tests/webhook/test_webhook_metrics_scrape.py checks the metrics and the dashboard against a scrape
of a running server.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import CHART_DIR, DEPLOY_DIR, REPO_ROOT, Helm, Obj, _find, missing_tool, objects, of_kind, one
from monitoring import (
    DASHBOARD,
    PROMETHEUS_RULE,
    RULES_TEST,
    dashboard_queries,
    load_dashboard,
    require_promtool,
    rule_file,
    run_promtool,
    write_rules_beside_test,
)

from dra_migrate.webhook import deadline, metrics
from dra_migrate.webhook.responses import Outcome

COMPONENT = DEPLOY_DIR / "components" / "monitoring"
ALL_ON = {"metrics": {name: {"enabled": True} for name in ("serviceMonitor", "prometheusRule", "dashboard")}}


@pytest.fixture(scope="module")
def promtool() -> Path:
    return require_promtool()


@pytest.fixture(scope="module")
def kustomize() -> str:
    found = _find("KUSTOMIZE", "kustomize", "kustomize-v*/kustomize")
    if found is None:
        missing_tool(
            "kustomize not found: set $KUSTOMIZE, put kustomize on PATH, or run tests/translator/build-kustomize.sh"
        )
    return found


def alert_rules() -> list[dict[str, Any]]:
    rule = yaml.safe_load(PROMETHEUS_RULE.read_text())
    return [r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r]


def alerts() -> list[str]:
    return [rule["alert"] for rule in alert_rules()]


def test_the_outcomes_the_rules_and_the_dashboard_name_are_the_servers() -> None:
    known = {str(outcome) for outcome in Outcome} | {metrics.SHED_OUTCOME, metrics.INVALID_OUTCOME}
    queries = [rule["expr"] for rule in alert_rules()] + [query for _, query in dashboard_queries(load_dashboard())]
    matched = [match for query in queries for match in re.findall(r'outcome=~?"([^"]*)"', query)]
    named = {value for match in matched for value in match.split("|")}
    assert {"denied_error", "shed_overloaded", "audited"} <= named
    assert named <= known, sorted(named - known)


def test_the_latency_alert_leaves_a_fifth_of_the_webhook_timeout() -> None:
    """The threshold follows the timeoutSeconds deploy/base registers (and the server assumes)."""
    (latency,) = [rule for rule in alert_rules() if rule["alert"] == "DraMigrateReviewLatencyNearTimeout"]
    threshold = float(re.fullmatch(r"(?s).*>\s*([0-9.]+)\s*", latency["expr"]).group(1))  # type: ignore[union-attr]
    registered = yaml.safe_load((DEPLOY_DIR / "base" / "mutatingwebhookconfiguration.yaml").read_text())
    (timeout,) = {hook["timeoutSeconds"] for hook in registered["webhooks"]}
    assert timeout == deadline.REVIEW_SECONDS and threshold == 0.8 * timeout


def test_the_rules_pass_promtool_check(promtool: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(rule_file(yaml.safe_load(PROMETHEUS_RULE.read_text())))
    output = run_promtool(promtool, "check", "rules", "--lint=all", "--lint-fatal", str(rules))
    assert f"SUCCESS: {len(alerts())} rules found" in output, output


def test_every_alert_fires_and_clears_in_the_unit_tests(promtool: Path, tmp_path: Path) -> None:
    cases: dict[str, list[tuple[int, bool]]] = {}
    for group in yaml.safe_load(RULES_TEST.read_text())["tests"]:
        for case in group["alert_rule_test"]:
            minutes = int(re.fullmatch(r"(\d+)m", case["eval_time"]).group(1))  # type: ignore[union-attr]
            cases.setdefault(case["alertname"], []).append((minutes, bool(case["exp_alerts"])))
    for alert in alerts():
        timeline = sorted(cases.get(alert, []))
        fired = [minute for minute, firing in timeline if firing]
        assert fired, f"{alert}: no unit test where it fires"
        assert any(not firing and minute > fired[0] for minute, firing in timeline), f"{alert}: never cleared"
    assert set(cases) == set(alerts())
    output = run_promtool(promtool, "test", "rules", str(write_rules_beside_test(tmp_path)))
    assert "SUCCESS" in output, output


def test_a_unit_test_that_expects_the_wrong_alert_fails(promtool: Path, tmp_path: Path) -> None:
    """promtool really evaluates the rules: a firing case expected to be silent fails."""
    test_file = write_rules_beside_test(tmp_path)
    tests = yaml.safe_load(test_file.read_text())
    tests["tests"][0]["alert_rule_test"][0]["exp_alerts"] = []
    test_file.write_text(yaml.safe_dump(tests))
    done = subprocess.run([str(promtool), "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "DraMigrateReviewsFailing" in done.stdout + done.stderr


def _kustomize_with_component(kustomize: str, tmp_path: Path) -> list[Obj]:
    """deploy/base with the component, as an overlay would use it."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(DEPLOY_DIR / "base", overlay)],
                "components": [os.path.relpath(COMPONENT, overlay)],
            }
        )
    )
    done = subprocess.run([kustomize, "build", str(overlay)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kustomize build failed:\n{done.stderr}"
    return objects(done.stdout, "kustomize build")


def _dashboard_map(objs: list[Obj]) -> Obj:
    maps = [o for o in of_kind(objs, "ConfigMap") if o["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    assert len(maps) == 1, [o["metadata"]["name"] for o in of_kind(objs, "ConfigMap")]
    return maps[0]


def _scrapes_the_webhook(objs: list[Obj]) -> dict[str, Any]:
    """The ServiceMonitor's endpoint, after checking it selects the webhook's Service by a port it has
    and trusts the CA of the Secret the Deployment serves."""
    monitor = one(objs, "ServiceMonitor")
    service, deployment = one(objs, "Service"), one(objs, "Deployment")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")
    served = {
        source["secret"]["name"]
        for volume in deployment["spec"]["template"]["spec"]["volumes"]
        for source in volume.get("projected", {}).get("sources", [])
        if "secret" in source
    }
    tls = endpoint["tlsConfig"]
    assert served == {tls["ca"]["secret"]["name"]}
    namespace = service["metadata"]["namespace"]
    assert tls["serverName"] == f"{service['metadata']['name']}.{namespace}.svc"
    assert monitor["metadata"]["namespace"] == namespace
    return dict(endpoint)


def test_chart_and_component_render_the_same_rules_and_dashboard(helm: Helm, kustomize: str, tmp_path: Path) -> None:
    charted = helm.template(values=ALL_ON)
    kustomized = _kustomize_with_component(kustomize, tmp_path)
    source = yaml.safe_load(PROMETHEUS_RULE.read_text())
    for objs in (charted, kustomized):
        rule = one(objs, "PrometheusRule")
        assert rule["spec"] == source["spec"]
        assert rule["metadata"]["namespace"] == "dra-migrate"
        dashboard = _dashboard_map(objs)
        assert dashboard["data"] == {"dra-migrate.json": DASHBOARD.read_text()}
    assert _scrapes_the_webhook(charted) == _scrapes_the_webhook(kustomized)


def test_monitoring_is_off_by_default(helm: Helm) -> None:
    objs = helm.template()
    assert not of_kind(objs, "ServiceMonitor") and not of_kind(objs, "PrometheusRule")
    assert not [o for o in of_kind(objs, "ConfigMap") if "grafana_dashboard" in o["metadata"].get("labels", {})]


def test_values_reach_the_monitoring_objects(helm: Helm) -> None:
    objs = helm.template(
        values={
            "metrics": {
                "serviceMonitor": {
                    "enabled": True,
                    "labels": {"release": "kps"},
                    "interval": "15s",
                    "tlsConfig": {"insecureSkipVerify": True},
                },
                "prometheusRule": {"enabled": True, "labels": {"release": "kps"}},
                "dashboard": {"enabled": True, "labels": {"team": "gpu"}, "namespace": "grafana"},
            }
        }
    )
    monitor, rule, dashboard = one(objs, "ServiceMonitor"), one(objs, "PrometheusRule"), _dashboard_map(objs)
    assert monitor["metadata"]["labels"]["release"] == "kps" and rule["metadata"]["labels"]["release"] == "kps"
    assert monitor["spec"]["endpoints"][0]["interval"] == "15s"
    assert monitor["spec"]["endpoints"][0]["tlsConfig"] == {"insecureSkipVerify": True}
    assert dashboard["metadata"]["namespace"] == "grafana" and dashboard["metadata"]["labels"]["team"] == "gpu"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"metrics": {"serviceMonitor": {"enable": True}}}, "enable"),
        ({"metrics": {"serviceMonitor": {"interval": "often"}}}, "interval"),
        ({"metrics": {"dashboard": {"labels": {"grafana_dashboard": 1}}}}, "grafana_dashboard"),
    ],
)
def test_a_bad_monitoring_value_is_refused_by_name(helm: Helm, values: dict[str, Any], named: str) -> None:
    result = helm.render(values=values)
    assert result.returncode != 0 and named in result.stderr, result.stderr


def test_the_chart_reads_the_monitoring_files_of_deploy_monitoring(helm: Helm, tmp_path: Path) -> None:
    """One copy: the chart's files/monitoring is a link to deploy/monitoring, not a second copy, and
    `helm package` puts the files themselves in the archive, so the packaged chart renders them."""
    link = CHART_DIR / "files" / "monitoring"
    assert link.is_symlink() and link.resolve() == (REPO_ROOT / "deploy" / "monitoring").resolve()
    packaged = helm.run("package", str(CHART_DIR), "--destination", str(tmp_path))
    assert packaged.returncode == 0, packaged.stderr
    (archive,) = tmp_path.glob("dra-migrate-*.tgz")
    rendered = helm.run(
        "template",
        "dra-migrate",
        str(archive),
        "--namespace",
        "dra-migrate",
        "--set",
        "metrics.prometheusRule.enabled=true",
    )
    assert rendered.returncode == 0, rendered.stderr
    rule = one(objects(rendered.stdout, "helm template of the packaged chart"), "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(PROMETHEUS_RULE.read_text())["spec"]
