"""The generated CEL matchConditions, and the copy in deploy/base."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from webhook_support import ROOT

from dra_migrate.cli import main
from dra_migrate.configfile import load_config
from dra_migrate.engine import default_config, parse_config
from dra_migrate.webhook.match_conditions import CONDITION_NAME, cel_string, expression, match_conditions, to_yaml

MWC = ROOT / "deploy" / "base" / "mutatingwebhookconfiguration.yaml"


def _deployed_conditions() -> list[dict[str, str]]:
    document = yaml.safe_load(MWC.read_text())
    (webhook,) = [w for w in document["webhooks"] if w["name"] == "pods.dra-migrate.io"]
    conditions: list[dict[str, str]] = webhook["matchConditions"]
    return conditions


def test_deploy_base_matches_generated_default() -> None:
    assert _deployed_conditions() == match_conditions(default_config())


def test_deploy_config_generates_the_same() -> None:
    deployed_config = load_config(str(ROOT / "deploy" / "base" / "config.yaml"))
    assert match_conditions(deployed_config) == match_conditions(default_config())


def test_expression_covers_every_converted_name() -> None:
    config = default_config()
    text = expression(config)
    for name in config.mappings.exact_names():
        assert cel_string(name) in text
    for pattern in config.mappings.patterns():
        assert cel_string(f"^(?:{pattern})$") in text
    # Unconvertible names (kept as they are) do not call the webhook.
    assert "nvidia.com/gpu.shared" not in text
    for field in ("containers", "initContainers"):
        assert f"has(object.spec.{field}) && object.spec.{field}.exists(c," in text
    for section in ("limits", "requests"):
        assert f"has(c.resources.{section}) && c.resources.{section}.exists(k," in text
    assert ".source" not in text
    assert text.count("(") == text.count(")")


def test_node_name_scope() -> None:
    claims = expression(default_config())
    assert "has(object.spec.nodeName) && object.spec.nodeName != '' &&\n  has(object.spec.resourceClaims)" in claims
    everything = expression(parse_config({"nodeName": {"scope": "all"}}))
    assert everything.endswith("(has(object.spec.nodeName) && object.spec.nodeName != '')")


def test_user_mappings_and_no_mappings() -> None:
    config = parse_config(
        {
            "builtinMappings": False,
            "mappings": [
                {"resource": "acme.com/fpga", "deviceClassName": "fpga.acme.com"},
                {"pattern": r"acme\.com/npu-(?P<size>[0-9]+)", "deviceClassName": "npu.acme.com"},
                {"resource": "acme.com/shared", "unconvertible": "no count"},
            ],
        }
    )
    text = expression(config)
    assert "k in ['acme.com/fpga']" in text
    assert r"k.matches('^(?:acme\\.com/npu-(?P<size>[0-9]+))$')" in text
    assert "nvidia" not in text and "acme.com/shared" not in text
    nothing = expression(parse_config({"builtinMappings": False}))
    assert "exists(k,\n      false)" in nothing


def test_cel_string_escapes() -> None:
    assert cel_string("a'b\\c") == "'a\\'b\\\\c'"


def test_yaml_round_trip() -> None:
    conditions = match_conditions(default_config())
    rendered = to_yaml(conditions)
    assert yaml.safe_load(rendered) == conditions
    assert rendered.startswith(f"- name: {CONDITION_NAME}\n  expression: |-\n")
    assert not re.search(r" +\n", rendered)


def test_cli_prints_the_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["webhook", "match-conditions"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == match_conditions(default_config())
    config = tmp_path / "config.yaml"
    config.write_text("nodeName:\n  scope: all\n")
    assert main(["webhook", "match-conditions", "--config", str(config)]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == match_conditions(parse_config({"nodeName": {"scope": "all"}}))
    config.write_text("nodeName:\n  scoop: all\n")
    assert main(["webhook", "match-conditions", "--config", str(config)]) == 2
    assert "scoop" in capsys.readouterr().err
