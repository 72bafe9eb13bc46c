"""CEL `matchConditions` for the MutatingWebhookConfiguration, generated from the mapping table.

kube-apiserver only calls the webhook for Pods that
- ask for a mapped resource name in any container or init container, in limits or requests
  (exact names with `in`, mapping patterns with `matches()`, anchored because CEL's
  `matches` is an RE2 *search*), or
- set `nodeName` while using claims (nodeName.scope `claims`), or any nodeName (scope `all`).

Every other pod skips the webhook entirely: no latency, no outage dependency. Conditions are
ANDed, so this is one condition with ORed clauses. Optional fields are guarded with has(),
maps are iterated by key with exists(). The legacy `resourceClaims[].source` is not
referenced: a 1.31+ apiserver drops it while decoding, before admission.
"""

from __future__ import annotations

from typing import Any

import yaml

from dra_migrate.engine import REQUESTING_CONTAINERS, Config

CONDITION_NAME = "requests-mapped-resource-or-pins-node"


def cel_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


def _name_test(config: Config, indent: str) -> str:
    """CEL over `k` (a resource name) that is true for every converted name, one test per line."""
    exact = list(dict.fromkeys(config.mappings.exact_names()))
    tests = [f"k in [{', '.join(cel_string(name) for name in exact)}]"] if exact else []
    tests += [f"k.matches({cel_string(f'^(?:{pattern})$')})" for pattern in dict.fromkeys(config.mappings.patterns())]
    return f" ||\n{indent}".join(tests) if tests else "false"


def _container_test(config: Config) -> str:
    """CEL over `c` (a container): asks for a converted name in limits or requests."""
    name = _name_test(config, "      ")
    sections = [
        f"  (has(c.resources.{section}) && c.resources.{section}.exists(k,\n      {name}))"
        for section in ("limits", "requests")
    ]
    return "has(c.resources) && (\n" + " ||\n".join(sections) + ")"


def _node_name_clause(config: Config) -> str:
    pins = "has(object.spec.nodeName) && object.spec.nodeName != ''"
    if config.node_name.scope == "all":
        return f"({pins})"
    return f"({pins} &&\n  has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)"


def expression(config: Config) -> str:
    container = _container_test(config)
    # App containers first: most pods ask there, and `||` stops at the first true clause.
    fields = sorted(REQUESTING_CONTAINERS, key=lambda field: field != "containers")
    clauses = [f"(has(object.spec.{field}) && object.spec.{field}.exists(c, {container}))" for field in fields]
    clauses.append(_node_name_clause(config))
    return " ||\n".join(clauses)


def match_conditions(config: Config) -> list[dict[str, str]]:
    return [{"name": CONDITION_NAME, "expression": expression(config)}]


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(conditions: list[dict[str, Any]]) -> str:
    """The YAML list, multi-line expressions as literal blocks (readable in the deploy file)."""
    return yaml.dump(conditions, Dumper=_Dumper, sort_keys=False, width=4096, default_flow_style=False)
