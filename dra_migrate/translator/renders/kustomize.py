"""Kustomizations in an input tree: which one applies a file, which others it pulls in.

A generated ResourceClaimTemplate must reach every unit a user applies on its own. For a file
that a kustomization lists (as a resource or a patch), that unit is the kustomization, so its
templates go into one file beside it, added to its `resources:`; overlays that pull the base in
reach them through the base.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from dra_migrate.manifests.yamltext import kubeyaml
from dra_migrate.translator.reading.inputs import MAX_FILE_BYTES, InputTooLargeError
from dra_migrate.translator.reading.naming import InputNames

FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TEMPLATES_FILE = "dra-migrate-templates.yaml"
_PATH_LISTS = ("resources", "components", "bases", "patchesStrategicMerge", "transformers", "generators", "validators")
_PATCH_LISTS = ("patches", "patchesJson6902")


class Kustomization:
    __slots__ = ("data", "directories", "encoding", "files", "patches", "path", "remote", "rewritten", "text")

    def __init__(self, path: Path, data: dict[str, Any], text: str, encoding: str = "utf-8") -> None:
        self.path = path  # the kustomization file
        self.data = data
        self.text = text
        self.encoding = encoding  # as kustomize reads it: UTF-8, UTF-8 with a BOM, or UTF-16 with one
        self.rewritten: str | None = None  # its text with inline patches converted (translator.conversion.patchplan)
        self.files: set[Path] = set()  # resolved files it lists (resources and patches)
        self.patches: set[Path] = set()  # those of them it lists as patches
        self.directories: set[Path] = set()  # resolved directories it lists
        self.remote: list[str] = remote_entries(data, path.parent)  # bases it loads from a repository or URL

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def renames(self) -> list[str]:
        return [key for key in ("namePrefix", "nameSuffix") if self.data.get(key)]


# kustomize's remote targets: a URL, an ssh remote, or a repository path such as
# github.com/org/repo/path?ref=v1 (a host name first)
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/)", re.IGNORECASE)


def remote_entries(data: dict[str, Any], directory: Path) -> list[str]:
    """The resources, bases and components the kustomization loads from elsewhere than the tree (a
    local directory that looks like a host name, `my.app/`, is local)."""
    out: list[str] = []
    for key in ("resources", "bases", "components"):
        values = data.get(key)
        if isinstance(values, list):
            out.extend(v for v in values if isinstance(v, str) and _REMOTE.match(v) and not _exists(directory / v))
    return out


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long to be a path
        return False


def _entries(data: dict[str, Any]) -> list[tuple[str, bool]]:
    """(path, is a patch) for every local path the kustomization lists."""
    out: list[tuple[str, bool]] = []
    for key in _PATH_LISTS:
        values = data.get(key)
        if isinstance(values, list):
            # an inline string entry (a whole transformer config) is no path
            out.extend((v, key == "patchesStrategicMerge") for v in values if isinstance(v, str) and "\n" not in v)
    for key in _PATCH_LISTS:
        values = data.get(key)
        for patch in values if isinstance(values, list) else ():
            if isinstance(patch, dict) and isinstance(patch.get("path"), str):
                out.append((patch["path"], True))
    return [(entry, patch) for entry, patch in out if "://" not in entry and not entry.startswith("git@")]


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_kustomization(data: bytes) -> tuple[str, str]:
    """(text, encoding) as kustomize decodes a kustomization file: UTF-8, or by its byte-order mark."""
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            return data.decode(encoding), encoding
    return data.decode("utf-8"), "utf-8"


def read_kustomization(path: Path) -> tuple[str, str]:
    with path.open("rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputTooLargeError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return decode_kustomization(data)


class KustomizationIndex:
    """Kustomization files read once each: those next to and above input files and those they pull in
    (`known`: the run's own), and, through `every` (translator.renders.graph), all of the repository's."""

    def __init__(self, names: InputNames | None = None) -> None:
        self._by_directory: dict[Path, Kustomization | None] = {}  # keys are resolved paths
        self._relevant: dict[Path, Kustomization] = {}  # those the run reached from its inputs
        self._nearest: dict[tuple[Path, Path], Kustomization | None] = {}  # (resolved directory, stop)
        self.names = names or InputNames()

    def at(self, directory: Path) -> Kustomization | None:
        """The kustomization in a directory, one the run reaches from its inputs (`known`)."""
        kustomization = self.read(directory)
        if kustomization is not None:
            self._relevant.setdefault(kustomization.directory, kustomization)
        return kustomization

    def read(self, directory: Path) -> Kustomization | None:
        """The kustomization in a directory, read at most once (a repository scan uses it too)."""
        if directory in self._by_directory:  # resolved already (a key resolves to itself)
            return self._by_directory[directory]
        directory = directory.resolve()
        if directory not in self._by_directory:
            self._by_directory[directory] = self._read(directory)
        return self._by_directory[directory]

    @staticmethod
    def _read(directory: Path) -> Kustomization | None:
        for name in FILE_NAMES:
            path = directory / name
            if not path.is_file():
                continue
            try:
                text, encoding = read_kustomization(path)
                data = kubeyaml.load(text)
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
                return None
            if not isinstance(data, dict):
                return None
            kustomization = Kustomization(path, data, text, encoding)
            for entry, patch in _entries(data):
                target = (directory / entry).resolve()
                (kustomization.directories if target.is_dir() else kustomization.files).add(target)
                if patch:
                    kustomization.patches.add(target)
            return kustomization
        return None

    def owner(self, file: Path, stop: Path) -> Kustomization | None:
        """The nearest kustomization between the file's directory and `stop` that lists the file.

        The search starts where the file is named, not where a symbolic link to it points: kustomize
        reads the link's directory, and so the owner always lies under `stop`."""
        directory = self.names.resolved(file.parent)
        # one lstat for a file that is not a link (its directory is resolved once)
        target = file.resolve() if file.is_symlink() else directory / file.name
        kustomization = self._nearest_from(directory, self.names.resolved(stop))
        return kustomization if kustomization is not None and target in kustomization.files else None

    def _nearest_from(self, directory: Path, stop: Path) -> Kustomization | None:
        """The first kustomization from `directory` up to `stop` (both resolved); once per directory of a tree."""
        key = (directory, stop)
        if key not in self._nearest:
            kustomization = self.at(directory)
            if kustomization is None and directory != stop and directory.parent != directory:
                kustomization = self._nearest_from(directory.parent, stop)
            self._nearest[key] = kustomization
        return self._nearest[key]

    def reachable(self, start: Kustomization) -> list[Kustomization]:
        """Kustomizations `start` pulls in through directory entries, transitively (not itself)."""
        seen: set[Path] = {start.directory}
        found: list[Kustomization] = []
        pending = list(start.directories)
        while pending:
            directory = pending.pop()
            if directory in seen:
                continue
            seen.add(directory)
            kustomization = self.at(directory)
            if kustomization is not None:
                found.append(kustomization)
                pending.extend(kustomization.directories)
        return found

    def known(self) -> list[Kustomization]:
        return list(self._relevant.values())


class PatchEntry(NamedTuple):
    """One entry of `patches` or `patchesJson6902`: its patch inline or in a file (resolved)."""

    key: str
    position: int
    target: dict[str, Any] | None
    file: Path | None
    inline: str | None

    @property
    def label(self) -> str:
        return f"{self.key}[{self.position}]"


def patch_entries(kustomization: Kustomization) -> list[PatchEntry]:
    out: list[PatchEntry] = []
    for key in _PATCH_LISTS:
        values = kustomization.data.get(key)
        for index, entry in enumerate(values if isinstance(values, list) else ()):
            if not isinstance(entry, dict):
                continue
            target = entry.get("target") if isinstance(entry.get("target"), dict) else None
            path, inline = entry.get("path"), entry.get("patch")
            file = (kustomization.directory / path).resolve() if isinstance(path, str) and "://" not in path else None
            out.append(PatchEntry(key, index, target, file, inline if isinstance(inline, str) else None))
    return out


def _matches(pattern: Any, value: str) -> bool:
    """kustomize reads a selector's kind, name and namespace as anchored regular expressions."""
    if pattern in (None, ""):
        return True
    try:
        return re.fullmatch(str(pattern), value) is not None
    except re.error:
        return str(pattern) == value


def selects(target: Mapping[str, Any], obj: Mapping[str, Any]) -> bool | None:
    """Whether a patch target selects `obj`; None for a label or annotation selector (not evaluated here)."""
    if target.get("labelSelector") or target.get("annotationSelector"):
        return None
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        metadata = {}
    return (
        _matches(target.get("group"), group)
        and _matches(target.get("version"), version)
        and _matches(target.get("kind"), str(obj.get("kind") or ""))
        and _matches(target.get("name"), str(metadata.get("name") or ""))
        and _matches(target.get("namespace"), str(metadata.get("namespace") or ""))
    )
