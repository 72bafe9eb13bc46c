"""Scalars mean to the translator what they mean to kubectl: checked against the real kubectl.

kubectl reads YAML with go-yaml v2 (YAML 1.1 rules that differ from PyYAML's: `N` is false, `1e3`
and `089` are numbers). The reader must agree with it, and every writer (the surgical editor's
block and flow renderers, the ruamel fallback, the plain-dump fallback, generated templates) must
write strings that kubectl reads back as the same strings.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubectl import kubectl_read, require_kubectl

from dra_migrate.engine import changes
from dra_migrate.manifests.yamltext import edit_document, kubeyaml
from dra_migrate.manifests.yamltext.edit import rewrite
from dra_migrate.manifests.yamltext.roundtrip import roundtrip_edit
from dra_migrate.manifests.yamltext.shapes import Layout

HEAD = "apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: probe\n"

# YAML 1.1 and 1.2 words and number forms where the readers disagree, and their neighbours
_TRICKY_TEXT = """
    y Y n N yes Yes YES no No NO on On ON off Off OFF true True TRUE false False FALSE
    ~ null Null NULL .nan .NaN .inf -.Inf +.INF nan inf Infinity
    1e3 1E3 1e+3 1.5e-3 089 08 09.5 017 0o17 0O17 0x1F 0X1f 0x_1F 0b101 -0b11 0B11 1_000 +5 -0
    1. .5 +.5 -.5e3 1e400 -1e400 9223372036854775808 18446744073709551616 -9223372036854775809
    1:20 2001-12-14 2001-12-14T21:59:43Z = << 0.1.2 1e 1e3x 0x 0b2 ._5 1__0
"""
TRICKY = [*_TRICKY_TEXT.split(), "2001-12-14 21:59:43"]

_scalar_text = st.one_of(
    st.sampled_from(TRICKY),
    st.text(alphabet="0123456789+-._eExXoObB:yYnN~", min_size=1, max_size=7),
    st.from_regex(r"[-+]?[0-9_]{1,4}(\.[0-9_]{0,3})?([eE][-+]?[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"0[xXoObB][0-9a-fA-F_]{1,5}", fullmatch=True),
)


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return require_kubectl()


def _plain_value(s: str) -> bool:
    """Whether `key: s` is a plain scalar whose text is exactly `s` (so both readers see the same text)."""
    try:
        node = yaml.compose(f"k: {s}\n", Loader=kubeyaml.KubeLoader)
    except yaml.YAMLError:
        return False
    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return False
    value = node.value[0][1]
    return isinstance(value, yaml.ScalarNode) and not value.style and value.value == s


def _agrees(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, bool) or ours is None or isinstance(ours, str):
        return type(ours) is type(theirs) and ours == theirs
    # numbers: kubectl prints them through JSON, where 1000.0 is 1000
    return (
        isinstance(theirs, int | float) and not isinstance(theirs, bool) and math.isclose(ours, theirs, rel_tol=1e-12)
    )


def _check_reader(kubectl: Path, scalars: list[str]) -> None:
    plain = [s for s in dict.fromkeys(scalars) if _plain_value(s)]
    # NaN and infinities have no JSON form: kubectl refuses them, so they cannot be compared here
    plain = [s for s in plain if not (isinstance(v := kubeyaml.go_resolve(s)[1], float) and not math.isfinite(v))]
    body = "".join(f"  k{i}: {s}\n" for i, s in enumerate(plain))
    text = HEAD + "spec:\n" + (body or "  none: 0\n")
    ours = kubeyaml.load(text)["spec"]
    theirs = kubectl_read(kubectl, text)["spec"]
    pairs = {s: (ours[f"k{i}"], theirs[f"k{i}"]) for i, s in enumerate(plain)}
    wrong = {s: pair for s, pair in pairs.items() if not _agrees(*pair)}
    assert not wrong, f"read differently from kubectl (ours, kubectl's): {wrong}"


def test_reader_agrees_with_kubectl_on_tricky_words(kubectl: Path) -> None:
    _check_reader(kubectl, TRICKY)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_scalar_text, min_size=1, max_size=80))
def test_reader_agrees_with_kubectl(kubectl: Path, scalars: list[str]) -> None:
    _check_reader(kubectl, scalars)


def _written(strings: list[str]) -> dict[str, str]:
    """One manifest per writer, each adding `strings` as values and as keys to an existing one."""
    old = {**kubeyaml.load(HEAD), "spec": {"keep": "me"}, "flow": {"keep": "me"}}
    values = {f"k{i}": s for i, s in enumerate(strings)}
    keys = {s: i for i, s in enumerate(strings)}
    new = {**old, "spec": {"keep": "me", **values, "keys": keys}, "flow": {"keep": "me", **values}}
    block_text = HEAD + "spec:\n  keep: me\nflow: {keep: me}\n"
    surgical = edit_document(block_text, kubeyaml.load(block_text), new)
    assert surgical.method == "surgical", surgical.reason
    return {
        "surgical editor": surgical.text,
        "ruamel fallback": roundtrip_edit(block_text, changes(kubeyaml.load(block_text), new), Layout()),
        "plain-dump fallback": rewrite(block_text, new),
        "generated documents": kubeyaml.dump(new),
    }


def _check_writers(kubectl: Path, strings: list[str]) -> None:
    strings = list(dict.fromkeys(strings))
    for writer, text in _written(strings).items():
        assert kubeyaml.load(text)["spec"]["keys"] == {s: i for i, s in enumerate(strings)}, writer
        read = kubectl_read(kubectl, text)
        wrong = {s: read["spec"][f"k{i}"] for i, s in enumerate(strings) if read["spec"][f"k{i}"] != s}
        wrong |= {s: read["flow"][f"k{i}"] for i, s in enumerate(strings) if read["flow"][f"k{i}"] != s}
        assert not wrong, f"{writer}: strings kubectl reads as other values: {wrong}\n{text}"
        assert read["spec"]["keys"] == {s: i for i, s in enumerate(strings)}, f"{writer}: keys changed"


def test_writers_keep_tricky_strings_for_kubectl(kubectl: Path) -> None:
    _check_writers(kubectl, TRICKY)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_scalar_text, st.text(max_size=6)), min_size=1, max_size=60))
def test_writers_keep_strings_for_kubectl(kubectl: Path, strings: list[str]) -> None:
    _check_writers(kubectl, strings)


@pytest.mark.parametrize(
    "body",
    [
        "  <<: [{gpu: 3}, {gpu: 1, cpu: 2}]\n",  # of a list, the earlier mapping wins
        "  a: &a {gpu: 3, x: a}\n  b:\n    <<: [*a, {gpu: 1}, {x: c, w: d}]\n",
        "  <<: {gpu: 3}\n  gpu: 4\n",  # the mapping's own key wins
        "  b: &b {gpu: 2, cpu: 1}\n  c: {<<: [*b, {gpu: 7}], cpu: 5}\n",
    ],
    ids=["list", "anchors", "own-key", "nested"],
)
def test_merge_keys_read_as_kubectl_reads_them(kubectl: Path, body: str) -> None:
    text = HEAD + "spec:\n" + body
    assert kubeyaml.load(text)["spec"] == kubectl_read(kubectl, text)["spec"]
