"""Recognise, from its text alone, a YAML document that the engine would return unchanged.

Most documents in a manifest tree are ConfigMaps, Services, RBAC, CRDs and workloads without
devices. Building Python objects for them is most of a run's time, so a document passes through
byte for byte, unparsed, when its text proves all of this:

1. it is a manifest: its first two lines of content are `apiVersion:` and `kind:` at column 0
   with plain string values, and no other line at column 0 can redefine them;
2. the engine would neither change nor report on it (dra_migrate.engine.text_triggers): its kind
   goes nowhere in the engine; or it is a workload whose text holds none of the trigger field
   names and no device-request key under `limits`/`requests` (see `_resource_keys_safe`); or it
   is a kind with no known pod specs whose text holds no mapped name (see `_names_mapped`);
3. it is within the bounds of translator.reading.limits, and loading it could not fail: libyaml parses it
   (no Python objects are built), and it has none of the constructs where PyYAML's constructor can
   fail after a successful parse or where a scalar's text differs from its value (escapes, tags,
   anchors, aliases, merge keys, complex keys, `=`, dates, `0b_`/`0x_`).

Whatever cannot be proven goes the full way: parsed, converted and reported as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import yaml
from yaml import _yaml as libyaml

from dra_migrate.engine import Config, Route, TextTriggers, text_triggers
from dra_migrate.manifests.yamltext import Document, kubeyaml
from dra_migrate.manifests.yamltext.kubeyaml import STR, go_resolve
from dra_migrate.manifests.yamltext.split import scan_document_starts
from dra_migrate.translator.reading import limits


class Header:
    """apiVersion and kind of a document that passes through."""

    __slots__ = ("api_version", "kind")

    def __init__(self, api_version: str, kind: str) -> None:
        self.api_version = api_version
        self.kind = kind


# Where tags, anchors, aliases, explicit keys and the `=` scalar can start (after a blank or a
# flow indicator), and the characters that continue an anchor or alias name in libyaml.
_TOKEN_BEFORE = frozenset(" \t\r\n[]{},")
_ANCHOR_NAME = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")
_BLANK_OR_END = frozenset(" \t\r\n")
_NON_BLANK = re.compile(r"\S")
_DASH_DIGIT = re.compile(r"-[0-9]")
_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_HEADER_LINE = re.compile(
    r"(apiVersion|kind):[ \t]+(?:([A-Za-z0-9][A-Za-z0-9._/-]*)|\"([A-Za-z0-9._/-]+)\"|'([A-Za-z0-9._/-]+)')"
    r"[ \t]*(?:[ \t]#[^\n]*)?\r?\n?"
)
_HEADER_KEYS = tuple(f"{quote}{key}" for key in ("apiVersion", "kind") for quote in ("", '"', "'"))
_START_LINE = re.compile(r"---[ \t]*(?:#[^\n]*)?\r?\n?")
_BLOCK_SCALAR = re.compile(
    r"^([ \t]*(?:-[ \t]+)*)((?:[A-Za-z0-9_.-]+|\"[^\"\n]*\"|'[^'\n]*'):[ \t]+)?[|>][+-]?[ \t]*(?:#[^\n]*)?\r?$", re.M
)
_COMMENT_LINE = re.compile(r"[ \t]*#")
# A run of the characters of an extended-resource name around its `/` (engine/unknown.py).
_NAME_RUN = re.compile(r"[a-z0-9][-a-z0-9.]*/[A-Za-z0-9][-A-Za-z0-9_.]*")
# Where a quoted scalar or a flow collection can start: at a token's start.
_OPENER = re.compile(r"(?:^[ \t]*|[:?-][ \t]+|[\[{,][ \t]*)([\"'\[{])")

# Lines after the first `limits`/`requests` that hold a `/`: the shapes whose `/` cannot be in a key.
_PLAIN = r"(?:[A-Za-z0-9_/.$~=+(<@%]|-(?=[^ \t\r\n]))(?:[^\s{}\[\],\"'#:]|:(?=[^\s,\]}])|[ \t]+(?=[^\s#]))*"
_DQ = r"\"[^\"\\\n]*\""
_SQ = r"'(?:[^'\n]|'')*'"
_FLOW_ITEM = rf"(?:{_DQ}|{_SQ}|[^\s{{}}\[\],\"'#:][^{{}}\[\],\"'#:\n]*?)"
_FLOW_SEQ = rf"\[[ \t]*(?:{_FLOW_ITEM}(?:[ \t]*,[ \t]*{_FLOW_ITEM})*[ \t]*,?)?[ \t]*\]"
_VALUE = rf"(?:{_PLAIN}|{_DQ}|{_SQ}|{_FLOW_SEQ})"
_KEY = rf"(?P<key>[A-Za-z0-9_./-]+|{_DQ}|{_SQ})"
_COMMENT = r"(?:[ \t]+#[^\n]*)?"
_SAFE_LINE_PATTERN = rf"[ \t]*(?:#[^\n]*|(?:-[ \t]+)*(?:{_KEY}:(?:[ \t]+{_VALUE})?|-[ \t]+{_VALUE}){_COMMENT}[ \t]*)\r?"
# The key a line starts with, as the safe-line pattern would take it: a device request's line is
# refused without that large pattern (one GPU workload in a run need not compile it).
_LEADING_KEY = re.compile(rf"[ \t]*(?:-[ \t]+)*{_KEY}:(?:[ \t]|\r?\Z)")


@lru_cache(maxsize=1)
def _safe_line() -> re.Pattern[str]:
    """Compiled on first use: it is large, and only workloads with a `/` after `limits` need it."""
    return re.compile(_SAFE_LINE_PATTERN)


@lru_cache(maxsize=256)
def _plain_is_string(value: str) -> bool:
    """Whether kubectl's reading (kubeyaml) takes this plain scalar for a string (not a bool, null or number)."""
    return go_resolve(value)[0] == STR


def _parses(text: str) -> bool:
    try:
        libyaml.CParser(text).raw_parse()
    except yaml.YAMLError:
        return False
    return True


class Prefilter:
    """One per configuration: `passes(document_text)` is a Header when the document can pass through."""

    def __init__(self, config: Config) -> None:
        self.triggers: TextTriggers = text_triggers(config)

    def passes(self, text: str, parse: bool = True) -> Header | None:
        """`parse=False` leaves out the last test, that libyaml parses the text: for a caller that
        loads the document anyway, which parses it (and which takes the whole-stream way when it
        does not load)."""
        header = _header(text)
        # A document over the bounds fails its file; aliases, the other way over, are refused below.
        if header is None or limits.might_nest_too_deep(text):
            return None
        where = self.triggers.route(header.api_version, header.kind)
        if where is Route.WORKLOAD:
            if not self._workload_safe(text):
                return None
        elif where is Route.UNKNOWN:
            if self._names_mapped(text):
                return None
        elif where is not Route.NONE:
            return None
        risky = _risky_positions(text, escapes_anywhere=where is not Route.NONE)
        if risky and not _all_exempt(risky, text):
            return None
        return header if not parse or _parses(text) else None

    def _workload_safe(self, text: str) -> bool:
        if any(name in text for name in self.triggers.field_names):
            return False
        found = [at for at in (text.find(s) for s in self.triggers.resource_sections) if at >= 0]
        return not found or self._resource_keys_safe(text, min(found))

    def names_mapped(self, text: str) -> bool:
        """Whether any scalar of the text can be a mapped device name (a file that may ask for devices)."""
        return self._names_mapped(text)

    def _names_mapped(self, text: str) -> bool:
        """Whether a key or scalar of a kind without known pod specs can be a mapped name.

        Such a name is one scalar: a maximal run of name characters holds it whole (escapes are
        refused with the other risky constructs), and a run that only contains it errs safe.
        """
        return any(self.triggers.mapped_name(found.group()) for found in _NAME_RUN.finditer(text))

    def _resource_keys_safe(self, text: str, start: int) -> bool:
        """No line from `start` on can hold a device-request key.

        A key under `limits`/`requests` comes after that word in the text (aliases and merge keys
        are refused elsewhere), and a request name holds a `/`. So every line with a `/` after the
        first of those words must be one whose `/` sits in a value, a comment, or a key the engine
        does not take for a device (`kubernetes.io/os`): a plain or closed quoted scalar, a
        one-line flow sequence of scalars, `- item`, a comment line, or block scalar text.
        """
        unsafe = []
        slash = text.find("/", start)
        while slash >= 0:
            line_start = text.rfind("\n", 0, slash) + 1
            line_end = text.find("\n", slash)
            line_end = len(text) if line_end < 0 else line_end
            if not self._line_safe(text[line_start:line_end]):
                if "|" not in text and ">" not in text:
                    return False  # no block scalar to hold the line (the usual device request)
                unsafe.append(line_start)
            slash = text.find("/", line_end)
        return _all_exempt(unsafe, text)

    def _line_safe(self, line: str) -> bool:
        lead = _LEADING_KEY.match(line)
        if lead is not None and self.triggers.device_name(_unquote(lead.group("key"))):
            return False
        found = _safe_line().fullmatch(line)
        if found is None:
            return False
        key = found.group("key")
        return key is None or not self.triggers.device_name(_unquote(key))


def _unquote(key: str) -> str:
    if key[:1] == '"':
        return key[1:-1]
    if key[:1] == "'":
        return key[1:-1].replace("''", "'")
    return key


def _content_lines(text: str, count: int) -> list[tuple[int, str]]:
    """The first `count` lines that are neither blank nor comments, with their offsets."""
    found: list[tuple[int, str]] = []
    position = 0
    while len(found) < count and position < len(text):
        line_end = _line_end(text, position)
        line = text[position:line_end]
        stripped = line.strip()
        if stripped and stripped[0] != "#":
            found.append((position, line))
        position = line_end
    return found


def _header(text: str) -> Header | None:
    """apiVersion and kind from the first two content lines, when nothing else can redefine them."""
    body = text[1:] if text.startswith("\ufeff") else text
    lines = _content_lines(body, 4)
    if lines and _START_LINE.fullmatch(lines[0][1]):
        lines.pop(0)
    if len(lines) < 2:
        return None
    found: dict[str, str] = {}
    for _, line in lines[:2]:
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            return None
        plain, double, single = match.group(2, 3, 4)
        if plain is not None and not _plain_is_string(plain):
            return None
        found[match.group(1)] = plain or double or single
    if len(found) != 2:
        return None
    # A plain value goes on over more-indented lines; the next content line must start a new key.
    if len(lines) > 2 and lines[2][1][:1] in (" ", "\t"):
        return None
    # Redefined at column 0 (as a plain or quoted key), or more than this one document: refused.
    header_end = lines[1][0] + len(lines[1][1])
    keys = sum(body.count("\n" + key) + body.startswith(key) for key in _HEADER_KEYS)
    if keys != 2 or "\n---" in body[header_end - 1 :] or "\n..." in body[header_end - 1 :]:
        return None
    return Header(found["apiVersion"], found["kind"])


def _risky_positions(text: str, escapes_anywhere: bool) -> list[int]:
    """Where the constructor could fail after a successful parse, or a key could read otherwise
    than its text: tags, anchors, aliases, merge keys, explicit keys, flow collections as keys
    (unhashable), the `=` scalar (no constructor), dates (invalid ones fail), `0b_`/`0x_` (an int
    without digits), and escapes in double-quoted scalars (anywhere in a workload; elsewhere only
    on column-0 lines, where apiVersion and kind are). Found with str.find: regexes cost more."""
    found: list[int] = []
    for char in "!&*?=":
        at = text.find(char)
        while at >= 0:
            if at == 0 or text[at - 1] in _TOKEN_BEFORE:
                after = text[at + 1 : at + 2]
                if (
                    char == "!"
                    or (char in "&*" and after in _ANCHOR_NAME and after)
                    or (char == "?" and (not after or after in _BLANK_OR_END))
                    or (char == "=" and (not after or after in _BLANK_OR_END or after in "]},"))
                ):
                    found.append(at)
            at = text.find(char, at + 1)
    for closer in "]}":
        at = text.find(closer)
        while at >= 0:
            following = _NON_BLANK.search(text, at + 1)
            if following is not None and following.group() == ":":
                found.append(at)
            at = text.find(closer, at + 1)
    for marker in ("<<", "0b_", "0x_"):
        if marker in text:
            found.append(text.find(marker))
    for dash in _DASH_DIGIT.finditer(text):  # a date is 4 digits, `-`, digits, `-`, digits
        if text[max(dash.start() - 4, 0) : dash.start()].isdigit() and _DATE.match(text, dash.start() - 4):
            found.append(dash.start())
    at = text.find("\\")
    while at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        if escapes_anywhere or text[line_start : line_start + 1] not in (" ", "\t", "#"):
            found.append(at)
        at = text.find("\\", at + 1)
    return found


def _exempt_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) of the text that can only be a string or a comment: block scalar bodies
    (`key: |` ...) and comment lines. Empty when that cannot be told line by line.

    Lines are read top down. A block scalar's body is indented deeper than the key (or `-`)
    holding it, down to the indentation of its first line (YAML 1.1, 8.1.1.1). The line-by-line
    reading holds only while no quoted scalar or flow collection runs on over a line break: then
    a later line that looks like a header or a comment could be inside it, so the scan gives up.
    Headers with an explicit indentation indicator are not recognised (their body reads as
    ordinary lines, which makes the scan give up or find nothing).
    """
    ranges: list[tuple[int, int]] = []
    position = 0
    while position < len(text):
        line_end = _line_end(text, position)
        line = text[position:line_end]
        if _COMMENT_LINE.match(line):
            ranges.append((position, line_end))
        elif not _closed_on_line(line):
            return []
        else:
            header = _BLOCK_SCALAR.match(line)
            if header is not None:
                prefix, key = header.group(1), header.group(2)
                parent = len(prefix) if key else len(prefix.rstrip()) - 1
                body_end = _body_end(text, line_end, parent)
                ranges.append((line_end, body_end))
                line_end = body_end
        position = line_end
    return ranges


def _line_end(text: str, position: int) -> int:
    found = text.find("\n", position)
    return len(text) if found < 0 else found + 1


def _body_end(text: str, position: int, parent: int) -> int:
    indent = -1
    while position < len(text):
        line_end = _line_end(text, position)
        line = text[position:line_end]
        if line.strip():
            width = len(line) - len(line.lstrip(" "))
            if indent < 0:
                if width <= parent:
                    break
                indent = width
            elif width < indent:
                break
        position = line_end
    return position


def _closed_on_line(line: str) -> bool:
    """Whether every quoted scalar and flow collection that starts on this line also ends on it.

    Errs towards False: a quote after a blank inside a flow's plain scalar counts as opening one.
    """
    first = _OPENER.search(line)
    if first is None:
        return True
    depth, quote, index = 0, "", first.start(1)
    while index < len(line):
        char = line[index]
        if quote == '"':
            if char == "\\":
                index += 1
            elif char == '"':
                quote = ""
        elif quote == "'":
            if char == "'" and line[index + 1 : index + 2] == "'":
                index += 1
            elif char == "'":
                quote = ""
        elif char == "#" and line[index - 1] in " \t":
            break
        elif char in "'\"" and (index == first.start(1) or line[index - 1] in " \t[{,:"):
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        index += 1
    return depth <= 0 and not quote


def _all_exempt(matches: list[int], text: str) -> bool:
    if not matches:
        return True
    ranges = _exempt_ranges(text)
    return all(any(a <= m < b for a, b in ranges) for m in matches)


_PREFILTERS: dict[int, tuple[Config, Prefilter]] = {}  # by id: a Config holds dicts, so it is not hashable


def prefilter_for(config: Config) -> Prefilter:
    """The prefilter of `config`, built once per configuration object."""
    found = _PREFILTERS.get(id(config))
    if found is None or found[0] is not config:
        if len(_PREFILTERS) >= 8:
            _PREFILTERS.clear()
        found = _PREFILTERS[id(config)] = (config, Prefilter(config))
    return found[1]


class WholeStreamNeeded(Exception):  # noqa: N818 (a signal, not an error)
    """The stream must be read whole (yamltext.split_stream): boundaries or a document need it."""


def passing_documents(text: str, prefilter: Prefilter, parse: bool = True) -> Iterator[Document]:
    """Like yamltext.split_stream, one document at a time; one that passes holds its Header, not its value.

    The other documents are loaded one by one, each on its own text (which parses to the same
    value as inside the stream). Raises WholeStreamNeeded, possibly after some documents, when the
    boundaries or a document need the whole-stream reading: the caller then starts again that
    way, which also reports any error exactly as before. `parse=False` (Prefilter.passes): the
    caller loads each passing document, and raises WholeStreamNeeded itself for one that does not load.
    """
    starts = scan_document_starts(text)
    if not starts or starts[0] != 0:
        raise WholeStreamNeeded
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        piece = text[start:end]
        header = prefilter.passes(piece, parse)
        if header is not None:
            yield Document(piece, start, end, header)
            continue
        yield Document(piece, start, end, load_document(piece))


def load_document(text: str) -> Any:
    """The value of `text`, one document of a stream read on its own; WholeStreamNeeded when it does
    not load, or is not exactly one document."""
    try:
        values = kubeyaml.load_all_quick(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise WholeStreamNeeded from exc
    if len(values) != 1:
        raise WholeStreamNeeded
    return values[0]


def documents_mentioning(text: str, needles: tuple[str, ...]) -> Iterator[Any]:
    """The values of the documents whose text holds one of `needles`; none if the stream does not parse.

    Only those documents are loaded (libyaml checks the rest without building objects).
    """
    if not _parses(text):
        return
    starts = scan_document_starts(text)
    if not starts:
        yield from _load_all(text)
        return
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        piece = text[start:end]
        if any(needle in piece for needle in needles):
            yield from _load_all(piece)


def _load_all(text: str) -> Iterator[Any]:
    try:
        yield from kubeyaml.load_all(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return
