"""split_stream: exact pieces, standalone parsing, regex scan agreeing with libyaml's events."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_migrate.manifests.yamltext import kubeyaml, split_stream
from dra_migrate.manifests.yamltext.split import event_document_starts, scan_document_starts


def _check(text: str) -> list[str]:
    stream = split_stream(text)
    pieces = [doc.text for doc in stream.documents]
    assert stream.join(pieces) == text
    loaded = kubeyaml.load_all(text)
    assert [doc.obj for doc in stream.documents] == loaded
    for doc in stream.documents:
        assert text[doc.start : doc.end] == doc.text
        assert kubeyaml.load(doc.text) == doc.obj
    scanned = scan_document_starts(text)
    if loaded and scanned is not None:
        assert scanned == event_document_starts(text)
    return pieces


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("a: 1\n", ["a: 1\n"]),
        ("a: 1", ["a: 1"]),
        ("# head\na: 1\n---\nb: 2\n# tail\n", ["# head\na: 1\n", "---\nb: 2\n# tail\n"]),
        ("--- # first\na: 1\n--- !!map\nb: 2\n", ["--- # first\na: 1\n", "--- !!map\nb: 2\n"]),
        ("---\n---\n---\na\n", ["---\n", "---\n", "---\na\n"]),
        ("a\n...\n# between\n%YAML 1.1\n---\nb\n", ["a\n...\n", "# between\n%YAML 1.1\n---\nb\n"]),
        ("a\n# about b\n%YAML 1.1\n---\nb\n", ["a\n# about b\n", "%YAML 1.1\n---\nb\n"]),
        ("%YAML 1.1\n%TAG !e! tag:yaml.org,2002:\n--- !e!map\na: 1\n", None),
        ("a: 1\r\n---\r\nb: 2\r\n...\r\n", ["a: 1\r\n", "---\r\nb: 2\r\n...\r\n"]),
        ("\ufeff# bom\na: 1\n---\nb", ["\ufeff# bom\na: 1\n", "---\nb"]),
        ("\ufeff---\na: 1\n", ["\ufeff---\na: 1\n"]),
        ("--- |\n  text\n---\n- x\n", ["--- |\n  text\n", "---\n- x\n"]),
        ("key: |\n  ---x\n  ...y\n---\nz\n", ["key: |\n  ---x\n  ...y\n", "---\nz\n"]),
        ("----\n---a\n", ["----\n---a\n"]),
        ("a: 1\n...\n", ["a: 1\n...\n"]),
        ("null\n%YAML 1.1\n---\nnull\n", ["null\n%YAML 1.1\n", "---\nnull\n"]),
        ("a: 1\n... # end\n# trailing\n", ["a: 1\n... # end\n# trailing\n"]),
    ],
)
def test_pieces(text: str, pieces: list[str] | None) -> None:
    got = _check(text)
    if pieces is not None:
        assert got == pieces


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "# a\n\n# b", "\ufeff# bom only\n"])
def test_stream_without_documents_is_all_tail(text: str) -> None:
    stream = split_stream(text)
    assert stream.documents == ()
    assert stream.tail == text
    assert stream.join([]) == text


def test_invalid_yaml_raises() -> None:
    with pytest.raises(yaml.YAMLError):
        split_stream("a: [1\n")


# -- property: random documents, separators and comments ------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text("abcxyz-./", min_size=1), inner, max_size=4),
    max_leaves=12,
)
_comments = st.lists(st.sampled_from(["# c", "#", "  # indented", "# --- not a marker", ""]), max_size=2)


@st.composite
def _streams(draw: st.DrawFn) -> str:
    parts: list[str] = []
    if draw(st.booleans()):
        parts.extend(line + "\n" for line in draw(_comments))
    count = draw(st.integers(0, 4))
    for i in range(count):
        value: Any = draw(_values)
        flow = draw(st.booleans())
        body = yaml.dump(value, Dumper=kubeyaml.KubeDumper, default_flow_style=flow, allow_unicode=True)
        if i > 0 or draw(st.booleans()):
            parts.append(
                draw(
                    st.sampled_from(
                        ["---\n", "--- # sep\n", "---   \n", "%YAML 1.1\n---\n", "...\n---\n", "...\n# x\n---\n"]
                    )
                )
            )
        parts.append(body)
        parts.extend(line + "\n" for line in draw(_comments))
    if draw(st.booleans()):
        parts.append("...\n")
    text = "".join(parts)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text


def _valid(text: str) -> bool:
    try:
        kubeyaml.load_all(text)
    except yaml.YAMLError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(_streams())
def test_random_streams_split_exactly(text: str) -> None:
    if _valid(text):
        _check(text)
