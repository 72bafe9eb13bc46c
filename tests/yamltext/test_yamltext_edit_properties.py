"""Properties of the surgical editor on random block documents with random comments and edits."""

from __future__ import annotations

import copy
import io
from typing import Any

import yaml
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from dra_migrate.engine import changes, same
from dra_migrate.manifests.yamltext import edit_document, kubeyaml
from dra_migrate.manifests.yamltext.edit import parses_to
from dra_migrate.manifests.yamltext.shapes import DeclineError
from dra_migrate.manifests.yamltext.surgical import SurgicalEditor

_keys = st.text("abcdefgxyz-./", min_size=1, max_size=6)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=10),
    st.sampled_from(["yes", "null", "1.5", "0x1f", "a: b", "- x", "#c", "'q'", '"d"', "a #b", "~", ""]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=15,
)
_docs = st.dictionaries(_keys, _values, min_size=1, max_size=5)


def _dump(value: Any, style: int) -> str:
    if style < 2:  # PyYAML: indentless sequences, mapping indent 2 or 4
        return yaml.dump(
            value,
            Dumper=kubeyaml.KubeDumper,
            default_flow_style=False,
            sort_keys=False,
            allow_unicode=True,
            width=1 << 20,
            indent=2 + 2 * style,
        )
    dumper = YAML(typ="safe", pure=True)  # indented sequences: `key:\n  - item`
    dumper.default_flow_style = False
    dumper.width = 1 << 20
    dumper.allow_unicode = True
    dumper.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    dumper.dump(value, out)
    return out.getvalue()


@st.composite
def _commented(draw: st.DrawFn, value: dict[str, Any]) -> str:
    text = _dump(value, draw(st.integers(0, 2)))
    lines = text.splitlines()
    out: list[str] = []
    for line in lines:
        if draw(st.integers(0, 4)) == 0:
            out.append(" " * draw(st.integers(0, 8)) + "# note")
        if draw(st.integers(0, 3)) == 0 and not line.rstrip().endswith(("|", ">", "|-", ">-")):
            line += "  # eol"
        out.append(line)
    result = "\n".join(out) + ("\n" if draw(st.booleans()) else "")
    if draw(st.booleans()):
        result = result.replace("\n", "\r\n")
    return result


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    found = [(path, value)] if isinstance(value, dict | list) else []
    if isinstance(value, dict):
        for k, v in value.items():
            found.extend(_containers(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(_containers(v, (*path, i)))
    return found


@st.composite
def _edited(draw: st.DrawFn, old: dict[str, Any], additions_only: bool = False) -> dict[str, Any]:
    new = copy.deepcopy(old)
    for _ in range(draw(st.integers(1, 4))):
        path, target = draw(st.sampled_from(_containers(new)))
        kinds = ["add"] if additions_only else ["add", "remove", "change"]
        kind = draw(st.sampled_from(kinds))
        if isinstance(target, dict):
            if kind == "add" or not target:
                key = draw(_keys)
                while key in target:
                    key += "n"
                target[key] = draw(_values)
            elif kind == "remove" and (path or len(target) > 1):
                del target[draw(st.sampled_from(sorted(target)))]
            else:
                target[draw(st.sampled_from(sorted(target)))] = draw(_values)
        elif kind == "add" or not target:
            target.append(draw(_values))
        elif kind == "remove":
            del target[draw(st.integers(0, len(target) - 1))]
        else:
            target[draw(st.integers(0, len(target) - 1))] = draw(_values)
    return new


def _surgical(text: str, old: Any, new: Any) -> str | None:
    root = yaml.compose(text, Loader=kubeyaml.KubeLoader)
    assert root is not None
    try:
        return SurgicalEditor(text, root, new).apply(changes(old, new))
    except DeclineError as exc:
        event(f"declined: {exc}")
        return None


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_surgical_result_parses_to_new_or_declines(data: st.DataObject) -> None:
    old = data.draw(_docs)
    text = data.draw(_commented(old))
    assume(same(kubeyaml.load(text), old))
    new = data.draw(_edited(old))
    surgical = _surgical(text, old, new)
    if surgical is not None:
        assert parses_to(surgical, new), surgical
        event("surgical")
    result = edit_document(text, old, new)
    assert parses_to(result.text, new)
    assert result.text.endswith("\n") == text.endswith("\n") or not text.strip()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_additions_keep_every_original_line(data: st.DataObject) -> None:
    old = data.draw(_docs)
    text = data.draw(_commented(old))
    assume(same(kubeyaml.load(text), old))
    new = data.draw(_edited(old, additions_only=True))
    result = edit_document(text, old, new)
    assert parses_to(result.text, new)
    if result.method != "surgical":
        event(f"fallback: {result.reason}")
        return
    # every original line is still there, byte for byte and in order (empty flow
    # collections that grew are re-rendered)
    original = [line for line in text.splitlines() if "[]" not in line and "{}" not in line]
    lines = iter(result.text.splitlines())
    assert all(any(line == got for got in lines) for line in original)
