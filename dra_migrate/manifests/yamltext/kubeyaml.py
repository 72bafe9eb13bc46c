"""YAML as kubectl reads it: plain scalars resolved by go-yaml v2's YAML 1.1 rules.

kubectl, kustomize's `-f` readers and the apiserver's YAML decoder all go through
sigs.k8s.io/yaml, which decodes with go.yaml.in/yaml/v2 into interface{} and re-encodes as JSON.
Its resolver (resolve.go, `resolve`) differs from PyYAML's YAML 1.1 resolver: `y`, `Y`, `n`, `N`
are booleans, `1e3` and `089` are floats, `0o17` is an int, while sexagesimal `1:20`, `=` and
timestamps stay strings (decode.go keeps timestamp-like values as strings for interface{}).

    KubeLoader     a CSafeLoader that reads plain scalars the way kubectl does
    KubeDumper     a CSafeDumper that quotes every string some reader in the path would not
                   read back as that string
    needs_quotes   the quoting decision itself, for the text renderers

The decision covers every reader a converted file meets: go-yaml v2 (kubectl, the apiserver),
PyYAML (this tool, and Python tooling around manifests) and ruamel.yaml's YAML 1.2 resolver
(this tool's fallback editor), whose rules come from the generated yaml12 module: importing
ruamel.yaml itself would cost a run more than all the rest of its YAML handling.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from dra_migrate.manifests.yamltext import yaml12

STR = "tag:yaml.org,2002:str"
BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
NULL = "tag:yaml.org,2002:null"
MERGE = "tag:yaml.org,2002:merge"
VALUE = "tag:yaml.org,2002:value"

# resolve.go resolveMap: exact words, looked up when the first character hints at them
_WORDS: dict[str, tuple[str, Any]] = {}
for _value, _tag, _words in (
    (True, BOOL, "y Y yes Yes YES true True TRUE on On ON"),
    (False, BOOL, "n N no No NO false False FALSE off Off OFF"),
    (None, NULL, "~ null Null NULL"),
    (math.nan, FLOAT, ".nan .NaN .NAN"),
    (math.inf, FLOAT, ".inf .Inf .INF +.inf +.Inf +.INF"),
    (-math.inf, FLOAT, "-.inf -.Inf -.INF"),
):
    for _word in _words.split():
        _WORDS[_word] = (_tag, _value)
_WORDS[""] = (NULL, None)

# resolve.go resolveTable: the first byte decides which rules apply at all
_SIGN, _DIGIT, _WORD, _DOT = "S", "D", "M", "."
_HINTS = {
    "+": _SIGN,
    "-": _SIGN,
    ".": _DOT,
    **dict.fromkeys("0123456789", _DIGIT),
    **dict.fromkeys("yYnNtTfFoO~", _WORD),
}

# strconv.ParseInt(s, 0, 64) syntax after underscores are removed: sign, base prefix, digits
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")  # what strconv.ParseFloat takes after a leading `.`
_TIMESTAMP_LEAD = re.compile(r"[0-9]{4}-")
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64_MAX = (1 << 64) - 1


def _go_int(plain: str) -> int | None:
    match = _GO_INT.fullmatch(plain)
    if match is None:
        return None
    sign, digits = match.groups()
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "0123456789":
        value = int(digits, 8)  # a leading 0 is octal in Go
    else:
        value = int(digits, 0) if len(digits) > 1 and digits[1].isalpha() else int(digits)
    if sign == "-":
        value = -value
    if _INT64[0] <= value <= _INT64[1]:
        return value
    if sign == "" and value <= _UINT64_MAX:  # strconv.ParseUint takes no sign
        return value
    return None


def _finite_float(text: str) -> float | None:
    value = float(text)
    return None if math.isinf(value) else value  # ParseFloat's range error: go-yaml keeps the string


def _timestamp_like(s: str) -> bool:
    """go-yaml's parseTimestamp quick check plus its formats; such values decode as strings anyway."""
    return _TIMESTAMP_LEAD.match(s) is not None


def go_resolve(s: str) -> tuple[str, Any]:
    """(tag, value) of a plain scalar as go-yaml v2 decodes it into interface{} (resolve.go `resolve`)."""
    hint = _HINTS.get(s[:1], _WORD if s == "" else None)
    if hint is None:
        return STR, s
    word = _WORDS.get(s)
    if word is not None:
        return word
    if hint == _DOT:
        if _DOT_FLOAT.fullmatch(s):
            value = _finite_float(s)
            if value is not None:
                return FLOAT, value
    elif hint in (_SIGN, _DIGIT):
        if _timestamp_like(s):
            return STR, s  # a timestamp, or not a number either way (`2001-` cannot parse as one)
        plain = s.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return INT, number
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            value = _finite_float(plain)
            if value is not None:
                return FLOAT, value
    return STR, s


# typed view of PyYAML's untyped implicit-tag resolver
_pyyaml_resolve: Callable[[type, str, tuple[bool, bool]], str] = Resolver().resolve


_YAML12_COMPILED: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {}


def _yaml12_resolvers(first: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Compiled on first use, as ruamel.yaml does: most first characters need none or one."""
    compiled = _YAML12_COMPILED.get(first)
    if compiled is None:
        resolvers = (yaml12.RESOLVERS[i] for i in yaml12.BY_FIRST_CHARACTER.get(first, ()))
        compiled = tuple((tag, re.compile(pattern, flags)) for tag, pattern, flags in resolvers)
        if first in yaml12.BY_FIRST_CHARACTER:  # other characters, from any input, are not kept
            _YAML12_COMPILED[first] = compiled
    return compiled


def yaml12_tag(s: str) -> str:
    """The tag ruamel.yaml's YAML 1.2 reader gives the plain scalar `s` (VersionedResolver.resolve)."""
    for tag, pattern in _yaml12_resolvers(s[:1]):
        if pattern.match(s):
            return tag
    return STR


@lru_cache(maxsize=4096)
def needs_quotes(s: str) -> bool:
    """Whether a plain `s` would read as something other than this string to any reader in the path."""
    if go_resolve(s)[0] != STR or _pyyaml_resolve(ScalarNode, s, (True, False)) != STR:
        return True
    return yaml12_tag(s) != STR


class KubeLoader(yaml.CSafeLoader):
    """libyaml's parser with go-yaml v2's reading of plain scalars (tags stay the standard ones)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            # `<<` is a merge key where a key is expected (go-yaml's isMerge), a string elsewhere
            return MERGE if value == "<<" else go_resolve(value)[0]
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]

    def flatten_mapping(self, node: Any) -> None:
        """`<<` as go-yaml reads it: of a list of merged mappings the earlier ones win, and the
        mapping's own keys win over all of them. (PyYAML 6 tells merged keys apart by object identity,
        so with two equal keys the last mapping's won.)"""
        merged: list[tuple[Any, Any]] = []  # in the order they apply: a later pair wins on construct
        own: list[tuple[Any, Any]] = []
        for key_node, value_node in node.value:
            if key_node.tag != MERGE:
                if key_node.tag == VALUE:
                    key_node.tag = STR
                own.append((key_node, value_node))
                continue
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in reversed(sources):
                if not isinstance(source, MappingNode):
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping or list of mappings for merging, but found {source.id}",
                        source.start_mark,
                    )
                self.flatten_mapping(source)
                merged.extend(source.value)
        node.value = merged + own


def _construct_plain(loader: yaml.SafeLoader, node: Any) -> Any:
    """Plain scalars resolved by go_resolve; explicitly tagged ones (`!!int "3"`) as PyYAML reads them."""
    if not node.style:  # libyaml marks plain scalars with '', the pure-Python composer with None
        tag, value = go_resolve(node.value)
        if tag == node.tag:
            return value
    return _SAFE_CONSTRUCTORS[node.tag](loader, node)


def _construct_application_tagged(loader: yaml.SafeLoader, node: Any) -> Any:
    """A node with a tag no Kubernetes reader knows (`!Ref`, `!!python/name:...`, as in CloudFormation or
    mkdocs.yml): go-yaml v2, kubectl's reader, keeps its plain value (a scalar's text, the mapping or list),
    so the file reads as data and is judged on its content instead of failing as invalid YAML."""
    if isinstance(node, ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_SAFE_CONSTRUCTORS = {tag: yaml.SafeLoader.yaml_constructors[tag] for tag in (BOOL, INT, FLOAT)}
for _tag in (BOOL, INT, FLOAT):
    KubeLoader.add_constructor(_tag, _construct_plain)
KubeLoader.add_constructor(MERGE, lambda loader, node: node.value)  # a `<<` value: the string
KubeLoader.add_constructor(None, _construct_application_tagged)


class KubeDumper(yaml.CSafeDumper):
    """Quotes strings that go-yaml, PyYAML or ruamel would read as another type (`"N"`, `"1e3"`)."""


def _represent_str(dumper: KubeDumper, data: str) -> yaml.Node:
    style = "'" if dumper.default_style is None and needs_quotes(data) else None
    return dumper.represent_scalar(STR, data, style=style)


KubeDumper.add_representer(str, _represent_str)


def load(text: str) -> Any:
    return yaml.load(text, Loader=KubeLoader)


def load_all(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=KubeLoader))


# Tags the node loader gives the nodes whose tag is implicit: a plain scalar, and anything else.
_PLAIN_IMPLICIT = "plain implicit"
_IMPLICIT = "implicit"
_RESOLVED_CACHE_SIZE = 1 << 16


class _NodeLoader(yaml.CSafeLoader):
    """libyaml's parser and composer, marking which nodes KubeLoader would resolve, and how."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        return _PLAIN_IMPLICIT if kind is ScalarNode and implicit[0] else _IMPLICIT


class _Declined(Exception):  # noqa: N818 (a signal, not an error)
    """A node the quick construction does not build: KubeLoader builds the whole stream."""


class _Builder:
    """Python values of the common nodes, as KubeLoader constructs them, without its generic machinery.

    Plain scalars are go_resolve'd (through a bounded cache: manifests repeat their words),
    other implicitly tagged scalars are strings, collections are dicts and lists. Anything else
    (an explicit tag, a merge key) is declined.
    """

    def __init__(self) -> None:
        self.resolved: dict[str, Any] = {}

    def value(self, node: Any) -> Any:
        cls = type(node)
        if cls is ScalarNode:
            tag = node.tag
            if tag is _IMPLICIT:
                return node.value
            if tag is not _PLAIN_IMPLICIT or node.style:
                raise _Declined
            text = node.value
            try:
                return self.resolved[text]
            except KeyError:
                if text == "<<":
                    raise _Declined from None
                if len(self.resolved) >= _RESOLVED_CACHE_SIZE:
                    self.resolved.clear()
                found = self.resolved[text] = go_resolve(text)[1]
                return found
        if node.tag is not _IMPLICIT:
            raise _Declined
        if cls is MappingNode:
            value = self.value
            return {value(key): value(item) for key, item in node.value}
        return [self.value(item) for item in node.value]


_builder = _Builder()


def load_all_quick(text: str) -> list[Any]:
    """Exactly `load_all(text)`, built about three times faster when the stream allows it.

    libyaml composes the nodes; plain dicts, lists and scalars are then built directly. A stream
    that may hold aliases (KubeLoader shares their objects), explicit tags, merge keys, unhashable
    keys, or that does not load at all, goes through `load_all`, which gives its value or its error.
    """
    if "&" in text and "*" in text:  # an alias needs an anchor
        return load_all(text)
    try:
        return _build_all(text)
    except (yaml.YAMLError, _Declined, TypeError, ValueError, RecursionError):
        return load_all(text)


def _build_all(text: str) -> list[Any]:
    loader = _NodeLoader(text)
    # Without aliases, nodes and values hold no reference cycles: the cycle collector, which
    # would otherwise run over and over while they are built, has nothing to find.
    collecting = gc.isenabled()
    gc.disable()
    try:
        values = []
        while loader.check_node():
            values.append(_builder.value(loader.get_node()))
        return values
    finally:
        if collecting:
            gc.enable()
        loader.dispose()


def unshared(obj: Any, text: str) -> Any:
    """`obj` with every alias made a value of its own, when `text` has any (`*name`).

    A loader gives an alias the very object of its anchor, so a change made through one place (the
    Master's `resources`) would appear at every other (the Worker's). Call it after the limits check:
    an alias bomb must be refused before it is expanded."""
    if "*" not in text:
        return obj
    return _copy(obj)


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {key: _copy(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_copy(value) for value in obj]
    return obj


def dump(obj: Any) -> str:
    """Block-style YAML of plain values, in key order, that kubectl reads back as exactly `obj`."""
    return str(
        yaml.dump(obj, Dumper=KubeDumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16)
    )
