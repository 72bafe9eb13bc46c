"""`kubeyaml.load_all_quick` is `kubeyaml.load_all`: the same values, of the same types, in the same
key order, or the same error.

Streams are random YAML written by hand rather than by a dumper: block and flow collections, plain
scalars that go-yaml reads as other types, quoted and block scalars, explicit tags (standard,
non-specific and unknown), anchors and aliases, merge keys, complex and duplicate keys, several
documents, and broken text; plus every file of the corpus and of examples/.
"""

from __future__ import annotations

import math
from typing import Any

import corpus
import pytest
from corpus import REPO_ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_migrate.manifests.yamltext import kubeyaml

_PLAIN = (  # noqa: SIM905 (the words read better as one text)
    "y Y n N yes no on off true False NULL ~ .nan -.inf 1e3 089 017 0o17 0x1F 0b101 1_000 +5 -0 1. .5 1:20 2001-12-14 "
    "= << 0x_1F 9223372036854775808 18446744073709551616 plain two words nvidia.com/gpu"
).split()
_ORDINARY = st.one_of(
    st.sampled_from(_PLAIN),
    st.sampled_from(_PLAIN).map(lambda s: f"'{s}'"),
    st.sampled_from(_PLAIN).map(lambda s: f'"{s}"'),
    st.sampled_from(['"esc\\tape\\u00e9"', '"multi\n  line"', "'it''s'", "", "[]", "{}", "[a, 1, y]", "{k: v, 1: n}"]),
)
# Per document, at most one kind of unusual construct, so that each is met outside the others.
_TAGGED = st.sampled_from(
    [
        "!!str 12",
        "!!int '7'",
        "! 12",
        '! "12"',
        '! "y"',
        '! "0o17"',
        "!!float 1",
        "!!bool yes",
        "!!null ''",
        "!custom x",
        "!!binary aGk=",
        "!!timestamp 2001-12-14",
        "!!int x",
        "!!set {a, b}",
    ]
)
# aliases of the anchor each such document starts with (`defs: &a1 ...`), and some that fail
_ALIASED = st.sampled_from(["*a1", "*a1", "*a1", "*a2", "&a2 [x]", "&a1 again", "*nowhere"])
_ORDINARY_KEYS = st.sampled_from(["a", "b", "name", "1", "y", "'q'", "~", "2.0", "''", "a"])
_UNUSUAL_KEYS = st.sampled_from(["<<", "? [k]", "[k]", "{k: v}", "!!str 1", "! 1"])
_COLLECTION_PREFIXES = {"tags": ["", " !!map", " !!omap", " !tag", " !"], "aliases": ["", " &a2"], "keys": [""]}


@st.composite
def _block(draw: st.DrawFn, indent: int, depth: int, unusual: str) -> list[str]:
    """Lines of a block mapping or sequence at `indent`; `unusual`: which odd constructs it may hold."""
    scalars = {"tags": st.one_of(_ORDINARY, _TAGGED), "aliases": st.one_of(_ORDINARY, _ALIASED)}.get(unusual, _ORDINARY)
    keys = st.one_of(_ORDINARY_KEYS, _UNUSUAL_KEYS) if unusual == "keys" else _ORDINARY_KEYS
    pad = " " * indent
    lines: list[str] = []
    is_map = draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        lead = f"{pad}{draw(keys)}:" if is_map else f"{pad}-"
        if depth > 0 and draw(st.integers(0, 2)) == 0:
            prefix = draw(st.sampled_from(_COLLECTION_PREFIXES.get(unusual, [""])))
            lines.append(lead + prefix)
            lines.extend(draw(_block(indent + 2, depth - 1, unusual)))
        elif draw(st.integers(0, 5)) == 0:
            lines.append(f"{lead} |")
            lines.extend(f"{pad}  {line}" for line in ("script: x", "  *not an alias* [x]", ""))
        else:
            lines.append(f"{lead} {draw(scalars)}")
    return lines


@st.composite
def streams(draw: st.DrawFn) -> str:
    documents = []
    for _ in range(draw(st.integers(1, 3))):
        unusual = draw(st.sampled_from(["", "", "", "tags", "aliases", "keys"]))
        lines = draw(_block(0, 3, unusual))
        if unusual == "aliases":
            lines = ["defs: &a1 {k: [v, 1]}", "body:", *(f"  {line}" for line in lines)]
        body = "\n".join(lines) + "\n"
        documents.append(draw(st.sampled_from(["", "---\n", "---\n", "--- # c\n", "%YAML 1.1\n---\n"])) + body)
    text = draw(st.sampled_from(["", "...\n"])).join(documents)
    if draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list(":-'\"#{}[]&*!|>\t"))) + text[at:]
    return text


def _same(ours: Any, theirs: Any, pairs: dict[int, int] | None = None) -> bool:
    """Equal values of equal types and key order, with the same sharing: an object aliased in one
    is aliased in the other (`pairs`: ids of the containers met so far, ours to theirs)."""
    pairs = {} if pairs is None else pairs
    if type(ours) is not type(theirs):
        return False
    if isinstance(ours, dict | list):
        if id(ours) in pairs or id(theirs) in pairs.values():
            return pairs.get(id(ours)) == id(theirs)
        pairs[id(ours)] = id(theirs)
    if isinstance(ours, dict):
        return [(type(k), k) for k in ours] == [(type(k), k) for k in theirs] and all(
            _same(ours[k], theirs[k], pairs) for k in ours
        )
    if isinstance(ours, list):
        return len(ours) == len(theirs) and all(_same(a, b, pairs) for a, b in zip(ours, theirs, strict=True))
    if isinstance(ours, float) and math.isnan(ours):
        return math.isnan(theirs)
    return bool(ours == theirs)


def _outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", load(text)
    except Exception as exc:  # the error itself is what is compared
        return type(exc).__name__, str(exc)


def _check(text: str) -> None:
    quick, full = _outcome(kubeyaml.load_all_quick, text), _outcome(kubeyaml.load_all, text)
    if quick[0] == full[0] == "value":
        assert _same(quick[1], full[1]), (quick, full)
    else:
        assert quick == full


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=streams())
def test_quick_load_is_load_all(text: str) -> None:
    _check(text)


def test_quick_load_is_load_all_on_the_corpus_and_examples() -> None:
    paths = sorted(p for root in (corpus.require(), REPO_ROOT / "examples") for p in root.rglob("*") if p.is_file())
    texts = [p.read_text(encoding="utf-8") for p in paths if p.suffix in (".yaml", ".yml", ".json")]
    assert len(texts) > 100
    for text in texts:
        _check(text)


def test_a_plain_manifest_is_built_without_the_full_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    text = corpus.require("legacy").glob("*.yaml").__next__().read_text(encoding="utf-8")
    expected = kubeyaml.load_all(text)

    def refuse(_: str) -> list[Any]:
        raise AssertionError("the full loader was used")

    monkeypatch.setattr(kubeyaml, "load_all", refuse)
    assert _same(kubeyaml.load_all_quick(text), expected)
    with pytest.raises(AssertionError, match="full loader"):
        kubeyaml.load_all_quick("a: !!binary aGk=\n")
