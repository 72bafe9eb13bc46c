"""The quoting decision's YAML 1.2 rules (the generated yaml12 table) read scalars as ruamel.yaml does."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from dra_migrate.manifests.yamltext import kubeyaml

_RUAMEL = VersionedResolver(version=(1, 2))


def ruamel_tag(s: str) -> str:
    return str(_RUAMEL.resolve(ScalarNode, s, (True, False)))


_scalars = st.one_of(
    st.text(alphabet="0123456789+-._eExXoObB:tTfFnNul~=<!&* \t\nZ", max_size=10),
    st.from_regex(r"[-+]?[0-9_]{0,4}(\.[0-9_]{0,3})?([eE][-+]?[0-9]{0,3})?", fullmatch=True),
    st.from_regex(r"[-+]?0[xXoObB]?[0-9a-fA-F_]{0,5}", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?Z?)?", fullmatch=True),
    st.text(max_size=12),
)


@settings(max_examples=3000, deadline=None)
@given(_scalars)
def test_yaml12_tag_is_ruamels(s: str) -> None:
    assert kubeyaml.yaml12_tag(s) == ruamel_tag(s)


@pytest.mark.parametrize(
    "s", ["", "~", "null", "NULL", "true", "FALSE", "<<", "=", "!", "&", "*", ".inf", "-.5", "0x1F", "2001-12-14"]
)
def test_yaml12_words_and_forms(s: str) -> None:
    assert kubeyaml.yaml12_tag(s) == ruamel_tag(s) != kubeyaml.STR


@pytest.mark.parametrize("s", ["0o_", "+0o_", "-_", "._5"])
def test_quoted_for_ruamel_alone(s: str) -> None:
    """go-yaml and PyYAML read these as strings, ruamel.yaml's 1.2 reader as numbers: still quoted."""
    assert kubeyaml.go_resolve(s)[0] == kubeyaml.STR
    assert isinstance(yaml.safe_load(f"k: {s}")["k"], str)
    assert kubeyaml.yaml12_tag(s) != kubeyaml.STR
    assert kubeyaml.needs_quotes(s)
