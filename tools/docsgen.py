"""The documentation's reference pages, generated from the code they describe so nothing is written twice.

* `reference/cli.md` from the argument parsers of every subcommand (`dra_migrate/cli.py` builds them);
* `reference/rules.md` from the finding rules declared in `dra_migrate/engine/rules.py`;
* `reference/configuration.md` from the configuration file's JSON Schema (`engine/config.py`'s, plus the
  sections parts register through `configsections.py`, such as the webhook's).

The documentation site makes them at build time (tools/mkdocs_hooks.py); `python tools/docsgen.py DIR`
writes them to DIR to read them without building the site.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# Help text is wrapped to the terminal's width: a fixed one keeps the pages the same on every machine.
_USAGE_COLUMNS = "100"


def _cell(text: str) -> str:
    """Text for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


# --------------------------------------------------------------------------------------------- CLI


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each subcommand of `parser`, the lazily made ones made now."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        complete = getattr(action, "complete", None)
        if callable(complete):  # dra_migrate.subcommands.Subcommands makes its parsers on demand
            complete()
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action._name_parser_map.items():
            yield name, helps.get(name, ""), sub


def _commands(
    parser: argparse.ArgumentParser, name: str = "", summary: str = ""
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Every parser below `parser`, depth first: (command words, one-line help, parser)."""
    yield name, summary, parser
    for sub_name, sub_help, sub in _subparsers(parser):
        yield from _commands(sub, f"{name} {sub_name}".strip(), sub_help)


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        invocation = formatter._format_action_invocation(action)
        meaning = formatter._expand_help(action) if action.help else ""
        if action.required and action.option_strings:
            meaning = f"required; {meaning}" if meaning else "required"
        rows.append(f"| `{_cell(invocation)}` | {_cell(meaning)} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows, ""]


def cli_reference() -> str:
    """Every subcommand's usage, description and arguments, as argparse knows them."""
    from dra_migrate.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = _USAGE_COLUMNS
    try:
        root = build_parser()
        root.prog = "dra-migrate"
        lines = [
            "# Command-line reference",
            "",
            "Generated from the argument parsers (`dra-migrate <command> --help` prints the same). "
            "`kubectl dra-migrate` takes the same commands: the package installs the command a second "
            "time as the kubectl plugin `kubectl-dra_migrate`.",
            "",
        ]
        for words, summary, parser in _commands(root):
            title = f"dra-migrate {words}".strip()
            lines += [f"## `{title}`", ""]
            about = " ".join((parser.description or summary).split())  # the description says more
            if about:
                lines += [about[0].upper() + about[1:] + ("" if about.endswith(".") else "."), ""]
            lines += ["```text", parser.format_usage().rstrip(), "```", ""]
            lines += _arguments_table(parser)
            if parser.epilog:
                lines += [" ".join(parser.epilog.split()), ""]
        return "\n".join(lines).rstrip() + "\n"
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


# ------------------------------------------------------------------------------------------- rules


def rules_reference() -> str:
    from dra_migrate.engine import rules_table

    return "\n".join(
        [
            "# Finding rules",
            "",
            "Every finding in a report carries one of these rules. The `rule` column of `--report json` is a "
            "contract: each id has one severity and one meaning, declared once in `dra_migrate/engine/rules.py`, "
            "which this table is generated from. `info` records a change that was made, `warning` needs a human "
            "look, `error` means that part was left as it was.",
            "",
            rules_table(),
        ]
    )


# ----------------------------------------------------------------------------------- configuration


def configuration_schema() -> dict[str, Any]:
    """The whole file's schema: the engine's keys and every section a part registers."""
    from dra_migrate.configsections import registered_sections
    from dra_migrate.engine.config import CONFIG_SCHEMA

    properties = {**CONFIG_SCHEMA["properties"]}
    for section in registered_sections():
        properties[section.key] = dict(section.schema)
    return {**CONFIG_SCHEMA, "properties": properties}


def _type_of(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " or ".join(f"`{v}`" if isinstance(v, str) else f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        items = schema.get("items", {})
        inner = "object" if items.get("type") == "object" and "properties" in items else _type_of(items)
        return f"list of {inner}"
    if kind == "object" and "additionalProperties" in schema and isinstance(schema["additionalProperties"], dict):
        return f"map of {_type_of(schema['additionalProperties'])}"
    return str(kind)


# The name patterns Kubernetes itself uses, by the names its API documentation gives them.
_PATTERN_NAMES = {
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "a DNS subdomain",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS label",
}


def _constraints(schema: Mapping[str, Any]) -> str:
    notes = []
    for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("maxItems", "at most")):
        if key in schema:
            notes.append(f"{word} {schema[key]}" + (" items" if key == "maxItems" else ""))
    if schema.get("maxLength"):
        notes.append(f"at most {schema['maxLength']} characters")
    if schema.get("uniqueItems"):
        notes.append("no duplicates")
    if "pattern" in schema:
        notes.append(_PATTERN_NAMES.get(schema["pattern"]) or f"matches `{schema['pattern']}`")
    return ", ".join(notes)


def configuration_keys(
    schema: Mapping[str, Any], prefix: str = ""
) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """(key path, schema, required) of every key, depth first; a list's items are `key[]`."""
    required = set(schema.get("required", ()))
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, sub, name in required
        if sub.get("type") == "object" and "properties" in sub:
            yield from configuration_keys(sub, path)
        items = sub.get("items", {})
        if sub.get("type") == "array" and "properties" in items:
            yield from configuration_keys(items, f"{path}[]")
        if sub.get("type") == "array" and items.get("type") == "array":
            yield from configuration_keys(items.get("items", {}), f"{path}[][]")


def undocumented_keys() -> list[str]:
    """Keys of the configuration schema without a description (the reference would be silent on them)."""
    return [path for path, sub, _ in configuration_keys(configuration_schema()) if not sub.get("description")]


def configuration_reference() -> str:
    lines = [
        "# Configuration file reference",
        "",
        "One YAML file serves the translator and `plan` (`--config`) and the webhook (`serve --config`). Every key is "
        "optional unless marked required; unknown keys are errors, so a misspelt setting never silently does "
        "nothing. Generated from the file's JSON Schema (`dra_migrate/engine/config.py` and the sections the "
        "parts register, such as the webhook's in `dra_migrate/webhook/policy.py`), which is what every command "
        "validates a file against. [Configuration](../configuration.md) shows an example file.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for path, sub, required in configuration_keys(configuration_schema()):
        meaning = sub.get("description", "")
        if sub.get("deprecated"):
            meaning = f"**deprecated**: {meaning}"
        if required:
            meaning = f"required; {meaning}" if meaning else "required"
        constraints = _constraints(sub)
        if constraints:
            meaning = f"{meaning} ({constraints})"
        default = f"`{json.dumps(sub['default'])}`" if "default" in sub else ""
        lines.append(f"| `{path}` | {_cell(_type_of(sub))} | {_cell(default)} | {_cell(meaning)} |")
    one_of = configuration_schema()["properties"]["mappings"]["items"].get("oneOf")
    if one_of:
        keys = " or ".join(f"`{alternative['required'][0]}`" for alternative in one_of)
        lines += ["", f"Each `mappings` entry has exactly one of {keys}."]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------- pages

PAGES = {
    "reference/cli.md": cli_reference,
    "reference/rules.md": rules_reference,
    "reference/configuration.md": configuration_reference,
}


def generate() -> dict[str, str]:
    """Every generated page: its path under docs/, its Markdown."""
    return {path: make() for path, make in PAGES.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write the generated reference pages into DIR.")
    parser.add_argument("directory", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    for path, text in generate().items():
        target = args.directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(target)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's dra_migrate
    sys.exit(main(sys.argv[1:]))
