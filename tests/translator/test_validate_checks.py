"""--validate catches what the apiserver rejects beyond the schema (names, CEL), and tells problems the
input already had from problems the conversion introduced; the configuration is checked the same way."""

from __future__ import annotations

import json
from pathlib import Path

from translator_cli_support import CliResult, Runner

from dra_migrate.engine import cel_problem, default_config

BAD_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: bad, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: Bad_Class
          selectors:
          - cel: {expression: 'device.attributes["gpu.nvidia.com"].profile =='}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ml}
spec:
  replicas: three
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers:
      - name: main
        image: cuda
        resources: {limits: {vendor.com/GPU: 1}}
"""

PATTERN_CONFIG = """\
mappings:
- pattern: 'vendor\\.com/(?P<model>[A-Za-z]+)'
  deviceClassName: '${model}.vendor.com'
"""


def _without_and_with_validate(run_cli: Runner, path: Path) -> tuple[CliResult, CliResult]:
    """`convert --report json` of `path`, then the same with --validate."""
    plain = run_cli("convert", "--report", "json", str(path))
    return plain, run_cli("convert", "--validate", "--report", "json", str(path))


def _rows(stderr: str) -> list[dict[str, str]]:
    return [r for r in json.loads(stderr)["findings"] if r["rule"] in ("schema", "schema-input")]


def test_validate_rejects_bad_class_names_and_cel_already_in_the_input(run_cli: Runner) -> None:
    result = run_cli("convert", "--validate", "--report", "json", "-", stdin=BAD_TEMPLATE)
    assert result.code == 2
    rows = _rows(result.stderr)
    assert {r["rule"] for r in rows} == {"schema-input"}
    text = " ".join(r["message"] for r in rows)
    assert "Bad_Class" in text and "not a DNS subdomain" in text and "not valid CEL" in text


def test_validate_tells_input_problems_from_conversion_problems(run_cli: Runner, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(PATTERN_CONFIG)
    result = run_cli("convert", "--validate", "--config", str(config), "--report", "json", "-", stdin=DEPLOYMENT)
    assert result.code == 2
    rows = _rows(result.stderr)
    inherited = [r for r in rows if r["rule"] == "schema-input"]
    introduced = [r for r in rows if r["rule"] == "schema"]
    assert inherited and all("replicas" in r["message"] for r in inherited)
    assert introduced and all("GPU.vendor.com" in r["message"] for r in introduced)
    assert all(r["severity"] == "error" for r in rows)


def test_validate_reports_an_unchanged_document_alike_as_input_or_output(run_cli: Runner, tmp_path: Path) -> None:
    """A document the conversion leaves as it is: checked once, its problems the input's."""
    path = tmp_path / "service.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: eighty}]\n")
    result = run_cli("convert", "--validate", "--report", "json", str(path))
    assert result.code == 2
    rows = _rows(result.stderr)
    assert [r["rule"] for r in rows] == ["schema-input"]
    assert rows[0]["message"].startswith(
        "Service invalid for Kubernetes 1.34, as the input already was: spec.ports.0.port"
    )


def test_validate_reports_a_document_that_does_not_parse_as_convert_does(run_cli: Runner, tmp_path: Path) -> None:
    """Loading an ordinary document to check it parses it: one that does not parse is reported as
    without --validate, from the whole stream."""
    path = tmp_path / "maps.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  k: v\n---\n"
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n c: d\n"
    )
    plain, checked = _without_and_with_validate(run_cli, path)
    assert plain.code == checked.code == 2
    assert json.loads(checked.stderr) == json.loads(plain.stderr)
    assert [f["message"] for f in json.loads(checked.stderr)["findings"]] == [
        "invalid YAML at line 11, column 2: did not find expected key"
    ]


def test_config_rejects_bad_class_names_and_cel_syntax(run_cli: Runner, tmp_path: Path) -> None:
    bad_name = tmp_path / "name.yaml"
    bad_name.write_text("mappings:\n- resource: example.com/a\n  deviceClassName: Bad_Class\n")
    result = run_cli("convert", "--config", str(bad_name), "-", stdin="{}")
    assert result.code == 2 and "mappings[0].deviceClassName" in result.stderr and "DNS subdomain" in result.stderr
    bad_cel = tmp_path / "cel.yaml"
    bad_cel.write_text(
        "mappings:\n- resource: example.com/a\n  deviceClassName: a.example.com\n"
        "  selectors: ['device.attributes[\"a.example.com\"].model ==']\n"
    )
    result = run_cli("convert", "--config", str(bad_cel), "-", stdin="{}")
    assert result.code == 2 and "mappings[0].selectors[0]: not valid CEL" in result.stderr


def test_kubernetes_cel_extensions_are_accepted() -> None:
    for expression in (
        'device.attributes["gpu.nvidia.com"].?profile.orValue("") == "1g.5gb"',
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("10Gi")) >= 0',
        'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))',
        'device.attributes.exists(k, v, k == "x")',
    ):
        assert cel_problem(expression) is None, expression
    for mapping in default_config().mappings.entries:
        for selector in mapping.selectors:
            assert cel_problem(selector.replace("${", "x").replace("}", "")) is None, selector


def test_validate_handles_a_malformed_api_version_or_kind_without_an_internal_error(
    run_cli: Runner, tmp_path: Path
) -> None:
    """An apiVersion or kind no schema file can have ("/apps/v1", "../x") is not looked up as a path."""
    path = tmp_path / "odd.yaml"
    path.write_text(
        "apiVersion: /apps/v1\nkind: Deployment\nmetadata: {name: a}\n---\n"
        "apiVersion: apps/v1\nkind: ../deployment--apps/v1\nmetadata: {name: b}\n"
    )
    plain, checked = _without_and_with_validate(run_cli, path)
    assert "internal error" not in checked.stderr
    assert checked.code == plain.code
    assert checked.stdout == path.read_text()
