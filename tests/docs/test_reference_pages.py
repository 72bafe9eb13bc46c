"""The generated reference pages say what the code says, and the hand-written pages stay in step.

tools/docsgen.py makes the pages from the argument parsers, engine/rules.py and the configuration
file's schema at every site build; these tests need no mkdocs.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_migrate.cli import build_parser
from dra_migrate.configfile import parse_settings
from dra_migrate.engine import RULES, rules_table
from tools import docsgen

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, found by argparse's own parsing: `--help` of each word path."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(words: str, parser: argparse.ArgumentParser) -> None:
        found[words] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                getattr(action, "complete", lambda: None)()
                for name, sub in action._name_parser_map.items():
                    walk(f"{words} {name}".strip(), sub)

    walk("", build_parser())
    return found


def test_the_cli_reference_has_every_subcommand_and_option() -> None:
    page = docsgen.cli_reference()
    parsers = all_parsers()
    assert {"convert", "diff", "krm", "plan", "serve", "certs generate", "webhook match-conditions"} <= set(parsers)
    for words, parser in parsers.items():
        section = page.split(f"## `{f'dra-migrate {words}'.strip()}`\n")
        assert len(section) == 2, f"no section for {words!r}"
        body = section[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for option in action.option_strings:
                assert option in body, f"{words}: {option} is not in the reference"
            if action.help and action.help != argparse.SUPPRESS and "%(" not in action.help:
                assert " ".join(action.help.split()).replace("|", "\\|") in body, f"{words}: {action.dest}"


def test_the_rule_reference_is_the_declared_table() -> None:
    page = docsgen.rules_reference()
    assert rules_table() in page
    for rule in RULES:
        assert f"| `{rule.id}` | {rule.severity} |" in page


def configuration_document(path: str, value: Any) -> dict[str, Any]:
    document: dict[str, Any] = {}
    *parents, leaf = path.split(".")
    here = document
    for part in parents:
        here = here.setdefault(part, {})
    here[leaf] = value
    return document


def test_every_configuration_key_is_described() -> None:
    assert docsgen.undocumented_keys() == [], "add a description to these keys' JSON Schema"
    page = docsgen.configuration_reference()
    for path, _, _ in docsgen.configuration_keys(docsgen.configuration_schema()):
        assert f"| `{path}` |" in page


def comparable(document: dict[str, Any]) -> tuple[Any, ...]:
    settings = parse_settings(document)
    config = settings.config
    return (
        config.target,
        config.strategy,
        config.node_name.mode,
        config.node_name.scope,
        config.resource_tolerations,
        [mapping.key for mapping in config.mappings.entries],
        {key: value for key, value in settings.sections.items()},
    )


@pytest.mark.parametrize(
    "path",
    [path for path, sub, _ in docsgen.configuration_keys(docsgen.configuration_schema()) if "default" in sub],
)
def test_a_documented_default_is_what_the_code_does_without_the_key(path: str) -> None:
    default = {p: s for p, s, _ in docsgen.configuration_keys(docsgen.configuration_schema())}[path]["default"]
    assert comparable(configuration_document(path, default)) == comparable({})


def test_the_configuration_example_is_a_valid_file() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    document = yaml.safe_load(example)
    parse_settings(document)  # raises ConfigError naming the field
    documented = {path.split(".")[0] for path, _, _ in docsgen.configuration_keys(docsgen.configuration_schema())}
    assert set(document) <= documented


def test_the_readme_fits_on_a_few_screens_and_its_links_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert "pipx install" in readme
    for target in LINK.findall(readme):
        if "://" not in target and not target.startswith("#"):
            assert (ROOT / target.split("#", 1)[0]).exists(), target
