"""The JSON 6902 patches and replacements of a run's kustomizations, planned before any file is converted.

Each patch that touches a mapped device is rewritten against the objects its kustomization renders
from (translator.jsonpatches; an inline strategic-merge patch is converted like a patch file,
translator.overlays): a patch file gets its new text, an inline patch a new text of its
kustomization (`Kustomization.rewritten`). What cannot be rewritten exactly (and a `replacements`
entry that substitutes a device count) is a problem of its kustomization: the run then writes
nothing that kustomization renders from.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from dra_migrate.engine import Config, Severity, convert
from dra_migrate.translator.jsonpatches import Operation, Rewrite, names_devices, operations_of, rewrite
from dra_migrate.translator.kustomize import Kustomization, KustomizationIndex, PatchEntry, patch_entries, selects
from dra_migrate.translator.overlays import claims_of, complete_patch
from dra_migrate.translator.yamltext import edit_document, kubeyaml
from dra_migrate.translator.yamltext.jsonstyle import dump_json_like

ReadText = Callable[[Path], str]  # raises OSError, UnicodeDecodeError or InputTooLargeError


class PatchProblem(NamedTuple):
    kustomization: Kustomization
    file: Path  # the file that holds the patch (the kustomization itself for an inline one)
    message: str


class PatchFile(NamedTuple):
    text: str  # the rewritten patch file
    templates: list[dict[str, Any]]
    summary: str


class PatchPlan:
    def __init__(self, index: KustomizationIndex, config: Config, read: ReadText) -> None:
        self.index = index
        self.config = config
        self._read = read
        self.files: dict[Path, PatchFile] = {}  # resolved patch file -> its DRA form
        self.inline: dict[Path, list[dict[str, Any]]] = {}  # kustomization file -> templates of its inline patches
        self.problems: list[PatchProblem] = []
        self._objects: dict[Path, list[dict[str, Any]]] = {}
        for kustomization in sorted(index.known(), key=lambda k: k.path):
            self._plan(kustomization)

    # -- what a kustomization renders from -----------------------------------------------------

    def _file_objects(self, path: Path) -> list[dict[str, Any]]:
        """A file's objects as kustomize reads them: a List's items in its place."""
        if path not in self._objects:
            try:
                loaded = kubeyaml.load_all(self._read(path))
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
                loaded = []  # an unreadable file has its own error where it is converted
            objects: list[dict[str, Any]] = []
            for document in (o for o in loaded if isinstance(o, dict)):
                listed = document.get("items") if str(document.get("kind", "")).endswith("List") else None
                if isinstance(listed, list):
                    objects.extend(o for o in listed if isinstance(o, dict))
                else:
                    objects.append(document)
            self._objects[path] = objects
        return self._objects[path]

    def _bases(self, kustomization: Kustomization) -> Iterator[dict[str, Any]]:
        """The original objects a kustomization's patches apply to: its resources and its bases'; for a
        component, those of the kustomizations that include it."""
        holders = [kustomization]
        if kustomization.data.get("kind") == "Component":
            holders += [k for k in self.index.known() if kustomization in self.index.reachable(k)]
        files: dict[Path, str] = {}  # file -> the namespace its base's kustomization gives its objects
        for holder in holders:
            files.update((path, "") for path in holder.files - holder.patches)
            for k in self.index.reachable(holder):
                namespace = k.data.get("namespace")
                files.update((path, str(namespace or "")) for path in k.files - k.patches)
        for path in sorted(files):
            namespace = files[path]
            for obj in self._file_objects(path):
                # a base renders its objects in its namespace before the overlay's patches see them
                yield _in_namespace(obj, namespace) if namespace else obj

    # -- planning ------------------------------------------------------------------------------

    def _plan(self, kustomization: Kustomization) -> None:
        self._refuse_replacements(kustomization)
        entries = patch_entries(kustomization)
        if not entries:
            return
        new_data = copy.deepcopy(kustomization.data)
        templates: list[dict[str, Any]] = []
        for entry in entries:
            where = entry.file if entry.file is not None else kustomization.path
            if entry.file is None and entry.inline is not None:
                strategic = self._strategic(kustomization, entry.inline)
                if isinstance(strategic, str):
                    message = f"{entry.label} cannot be converted: {strategic}"
                    self.problems.append(PatchProblem(kustomization, where, message))
                elif strategic is not None:
                    new_data[entry.key][entry.position]["patch"] = strategic[0]
                    templates.extend(strategic[1])
                    continue
            found = self._rewrite(kustomization, entry)
            if found is None:
                continue
            text, operations, result = found
            if result.problem is not None:
                message = f"{entry.label} cannot be converted exactly: {result.problem}"
                self.problems.append(PatchProblem(kustomization, where, message))
                continue
            if result.operations is None:
                continue
            summary = f"{entry.label} of {kustomization.path.name}: operations on device requests rewritten to claims"
            edited = _edited(text, operations, result.operations)
            if entry.file is not None:
                self._plan_file(kustomization, entry.file, edited, result.templates, summary)
            else:
                new_data[entry.key][entry.position]["patch"] = edited
                templates.extend(result.templates)
        if new_data != kustomization.data:
            kustomization.rewritten = edit_document(kustomization.text, kustomization.data, new_data).text
            self.inline[kustomization.path] = templates

    def _strategic(self, kustomization: Kustomization, text: str) -> tuple[str, list[dict[str, Any]]] | str | None:
        """An inline strategic-merge patch converted like a patch file (its text and templates, with the
        base's other claims: translator.overlays), a problem, or None when it needs no change."""
        try:
            document = kubeyaml.load(text)
        except (ValueError, yaml.YAMLError):
            return None
        if not isinstance(document, dict) or "kind" not in document:
            return None
        converted = convert(copy.deepcopy(document), self.config)
        errors = [f.message for f in converted.findings if f.severity is Severity.ERROR]
        if errors:
            return errors[0]
        if not converted.changed or converted.object is None:
            return None
        edited = edit_document(text, document, converted.object, converted.changes).text
        bases = [convert(copy.deepcopy(o), self.config).object for o in self._bases(kustomization)]
        return complete_patch(edited, claims_of(bases, self.config), self.config), converted.templates

    def _rewrite(self, kustomization: Kustomization, entry: PatchEntry) -> tuple[str, list[Operation], Rewrite] | None:
        """The patch's text and operations, and their DRA form; None for what is no JSON 6902 patch."""
        try:
            text = entry.inline if entry.file is None else self._read(entry.file)
            operations = operations_of(kubeyaml.load(text)) if text is not None else None
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
            return None  # not a JSON 6902 patch this plan can read: render verification still checks it
        if text is None or operations is None or entry.target is None:
            return None
        targets: list[dict[str, Any]] = []
        for obj in self._bases(kustomization):
            chosen = selects(entry.target, obj)
            if chosen is None:  # a label or annotation selector
                if not names_devices(operations, self.config):
                    return None
                return text, operations, Rewrite(None, [], "its target uses a label or annotation selector")
            if chosen:
                targets.append(obj)
        return text, operations, rewrite(operations, targets, self.config)

    def _plan_file(
        self, kustomization: Kustomization, file: Path, text: str, templates: list[dict[str, Any]], summary: str
    ) -> None:
        planned = self.files.get(file)
        if planned is not None and planned.text != text:
            message = "the kustomizations that use this patch need different rewrites of it"
            self.problems.append(PatchProblem(kustomization, file, message))
            return
        self.files[file] = PatchFile(text, templates, summary)

    def _refuse_replacements(self, kustomization: Kustomization) -> None:
        values = kustomization.data.get("replacements")
        for index, entry in enumerate(values if isinstance(values, list) else ()):
            for field_path in _field_paths(entry):
                if self._names_device(field_path):
                    message = (
                        f"replacements[{index}] substitutes a device count into `{field_path}` after the conversion "
                        "would have removed it: set the count in the base or in a patch, or convert this by hand"
                    )
                    self.problems.append(PatchProblem(kustomization, kustomization.path, message))

    def _names_device(self, field_path: str) -> bool:
        field_path = field_path.replace("\\.", ".")  # kustomize escapes the dots of a name in a field path
        if any(name in field_path for name in self.config.mappings.exact_names()):
            return True
        return any(re.search(pattern.strip("^$"), field_path) for pattern in self.config.mappings.patterns())

    def failed(self) -> set[Path]:
        """Kustomization files with a patch problem."""
        return {p.kustomization.path for p in self.problems}


def _field_paths(entry: Any) -> Iterator[str]:
    targets = entry.get("targets") if isinstance(entry, dict) else None
    for target in targets if isinstance(targets, list) else ():
        paths = target.get("fieldPaths") if isinstance(target, dict) else None
        yield from (p for p in paths if isinstance(p, str)) if isinstance(paths, list) else ()


def _edited(text: str, old: list[Operation], new: list[Operation]) -> str:
    """The patch text with its operations replaced, its other bytes kept (JSON stays JSON)."""
    if text.lstrip().startswith("["):
        return dump_json_like(text, new)
    return edit_document(text, old, new).text


def _in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return {**obj, "metadata": {**(metadata if isinstance(metadata, dict) else {}), "namespace": namespace}}
