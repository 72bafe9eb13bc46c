"""The patches and replacements of a run's kustomizations, planned before any file is converted.

Each kustomization's render is followed as kustomize builds it (its resources and bases, its
components, then its strategic-merge patches, `patches` and JSON 6902 patches in that order), so
every patch is planned against the objects it patches, earlier patches and overlay levels applied.
A strategic-merge patch gets the form that takes the converted object where the conversion of the
patched one is (translator.conversion.strategic); a JSON 6902 patch that touches a mapped device has its
device operations rewritten (translator.conversion.jsonpatches), the others kept as written. A patch file gets
its new text, an inline patch a new text of its kustomization (`Kustomization.rewritten`). What
cannot be rewritten exactly (and a `replacements` entry that substitutes a device count) is a
problem of its kustomization: the run then writes nothing that kustomization renders from.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from dra_migrate.engine import Config, Severity, convert
from dra_migrate.manifests.yamltext import edit_document, kubeyaml, split_stream
from dra_migrate.manifests.yamltext.jsonstyle import dump_json_like
from dra_migrate.translator.conversion.jsonpatches import (
    Operation,
    apply_as_kustomize,
    names_devices,
    operations_of,
    rewrite,
)
from dra_migrate.translator.conversion.overlays import claims_of, complete_patch
from dra_migrate.translator.conversion.strategic import (
    Form,
    UnsupportedDirectiveError,
    is_keyed,
    merge,
    strategic_form,
    targets_of,
)
from dra_migrate.translator.renders.kustomize import (
    Kustomization,
    KustomizationIndex,
    PatchEntry,
    patch_entries,
    selects,
)

ReadText = Callable[[Path], str]  # raises OSError, UnicodeDecodeError or InputTooLargeError


class PatchProblem(NamedTuple):
    kustomization: Kustomization
    file: Path  # the file that holds the patch (the kustomization itself for an inline one)
    message: str


class PatchFile(NamedTuple):
    text: str  # the rewritten patch file
    templates: list[dict[str, Any]]
    summary: str
    rule: str | None = "json-patch-converted"  # None: the patch needs no change


class PatchPlan:
    def __init__(self, index: KustomizationIndex, config: Config, read: ReadText) -> None:
        self.index = index
        self.config = config
        self._read = read
        self.files: dict[Path, PatchFile] = {}  # resolved patch file -> its DRA form
        self.inline: dict[Path, list[dict[str, Any]]] = {}  # kustomization file -> templates of its inline patches
        self.problems: list[PatchProblem] = []
        self._objects: dict[Path, list[dict[str, Any]]] = {}
        self._renders: dict[Path, list[dict[str, Any]]] = {}
        self._replacements_checked: set[Path] = set()
        self._new_data: dict[Path, dict[str, Any]] = {}  # kustomization file -> its data with inline patches converted
        for kustomization in sorted(index.known(), key=lambda k: k.path):
            if kustomization.data.get("kind") == "Component":
                continue  # its patches are planned where it is included
            if self._patches_anything(kustomization):
                self._render(kustomization)  # its bases' files are read only for this
            else:
                self._refuse_replacements(kustomization)

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

    def _patches_anything(self, kustomization: Kustomization) -> bool:
        """Whether the kustomization or a component it includes has a patch."""
        components = (
            self.index.at((kustomization.directory / e).resolve()) for e in _listed(kustomization.data, ("components",))
        )
        return any(strategic_entries(k) or patch_entries(k) for k in (kustomization, *components) if k is not None)

    def _render(self, kustomization: Kustomization) -> list[dict[str, Any]]:
        """The objects a kustomization renders as the tree is (unconverted), its patches applied in
        kustomize's order (its components' after its resources; strategic-merge patches, `patches`,
        then JSON 6902 ones; its namespace after them). Names keep no prefix: patches name objects
        by their own names. Each kustomization's patches are planned here, against what they patch."""
        if kustomization.path in self._renders:
            return self._renders[kustomization.path]
        self._renders[kustomization.path] = []  # a kustomization that includes itself renders nothing more
        objects: list[dict[str, Any]] = []
        for entry in _listed(kustomization.data, ("resources", "bases")):
            target = (kustomization.directory / entry).resolve()
            sub = self.index.at(target) if target in kustomization.directories else None
            if sub is not None and sub.data.get("kind") != "Component":
                objects.extend(self._render(sub))
            elif target in kustomization.files:
                objects.extend(self._file_objects(target))
        for entry in _listed(kustomization.data, ("components",)):
            component = self.index.at((kustomization.directory / entry).resolve())
            if component is not None:
                for path in sorted(component.files - component.patches):
                    objects.extend(self._file_objects(path))
                objects = self._patched(component, objects)
        objects = self._patched(kustomization, objects)
        namespace = kustomization.data.get("namespace")
        if namespace and kustomization.data.get("kind") != "Component":
            objects = [_in_namespace(o, str(namespace)) for o in objects]
        self._renders[kustomization.path] = objects
        return objects

    # -- planning ------------------------------------------------------------------------------

    def _patched(self, kustomization: Kustomization, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Plan each patch of the kustomization against the objects it patches, and apply it as written."""
        self._refuse_replacements(kustomization)
        entries = strategic_entries(kustomization) + patch_entries(kustomization)
        entries.sort(key=lambda e: _ORDER.index(e.key))
        if not entries:
            return objects
        new_data = self._new_data.setdefault(kustomization.path, copy.deepcopy(kustomization.data))
        templates = self.inline.get(kustomization.path, [])
        for entry in entries:
            where = entry.file if entry.file is not None else kustomization.path
            try:
                text = entry.inline if entry.file is None else self._read(entry.file)
                document = kubeyaml.load_all(text) if text is not None else []
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
                continue  # not a patch this plan can read: render verification still checks it
            assert text is not None
            operations = operations_of(document[0]) if len(document) == 1 else None
            if operations is not None:
                planned = self._json_patch(entry, text, operations, objects)
                objects = _apply_each(objects, entry, operations)
            else:
                planned = self._strategic(entry, text, objects)
                objects = _merge_each(objects, entry, text)
            if planned is None:
                continue
            if isinstance(planned, str):
                self.problems.append(
                    PatchProblem(kustomization, where, f"{entry.label} cannot be converted exactly: {planned}")
                )
                continue
            new_text, new_templates, summary = planned
            if entry.file is not None:
                rule: str | None = "json-patch-converted" if operations is not None else "device-plugin-to-claim"
                if new_text == text:
                    rule = None  # planned as it is: not converted alone
                summary = f"{entry.label} of {kustomization.path.name}: {summary}"
                self._plan_file(kustomization, entry.file, PatchFile(new_text, new_templates, summary, rule))
            elif new_text != text:
                if entry.key == "patchesStrategicMerge":
                    new_data[entry.key][entry.position] = new_text
                else:
                    new_data[entry.key][entry.position]["patch"] = new_text
                templates.extend(new_templates)
        if new_data != kustomization.data:
            kustomization.rewritten = edit_document(kustomization.text, kustomization.data, new_data).text
            self.inline[kustomization.path] = templates
        return objects

    def _json_patch(
        self, entry: PatchEntry, text: str, operations: list[Operation], objects: list[dict[str, Any]]
    ) -> tuple[str, list[dict[str, Any]], str] | str | None:
        """A JSON 6902 patch's DRA form: its new text, templates and summary; a problem; None: as written."""
        if entry.target is None:
            return None
        targets: list[dict[str, Any]] = []
        for obj in objects:
            chosen = selects(entry.target, obj)
            if chosen is None:  # a label or annotation selector
                if not names_devices(operations, self.config):
                    return None
                return "its target uses a label or annotation selector"
            if chosen:
                targets.append(_with_annotations(obj) if entry.key == "patches" else obj)
        result = rewrite(operations, targets, self.config)
        if result.problem is not None:
            return result.problem
        if result.operations is None:
            return None
        return (
            _edited(text, operations, result.operations),
            result.templates,
            "operations on device requests rewritten to claims",
        )

    def _strategic(
        self, entry: PatchEntry, text: str, objects: list[dict[str, Any]]
    ) -> tuple[str, list[dict[str, Any]], str] | str | None:
        """A strategic-merge patch's DRA form for the objects it patches (translator.conversion.strategic); None
        where it patches no object this plan renders (it is then converted alone, as a file is)."""
        stream = split_stream(text)
        parts: list[str] = []
        templates: list[dict[str, Any]] = []
        matched = devices = False
        for document in stream.documents:
            parts.append(document.text)
            patch = document.obj
            if not isinstance(patch, dict):
                continue
            targets = _targets(entry, patch, objects)
            if targets is None:
                if names_devices([{"value": patch}], self.config):
                    return "its target uses a label or annotation selector"
                continue
            matched |= bool(targets)
            forms: list[Form] = []
            for target in targets:
                form = strategic_form(patch, target, self.config)
                if isinstance(form, str):
                    return form
                forms.append(form)
            if any(f.patch != forms[0].patch for f in forms):
                return "the objects it targets need different rewrites"
            for form in forms:
                known = {t["metadata"]["name"] for t in templates}
                templates.extend(t for t in form.templates if t["metadata"]["name"] not in known)
            if forms and forms[0].patch != patch:
                devices = True
                parts[-1] = edit_document(document.text, patch, forms[0].patch).text
            devices |= names_devices([{"value": patch}], self.config)
        if not matched:  # a file is then converted alone, as before
            return self._alone(text, objects) if entry.file is None else None
        if not devices:  # its form for what it patches is itself (a patch in DRA form already, one of replicas)
            return text, [], ""
        return stream.join(parts), templates, "device requests rewritten to what the converted base needs"

    def _alone(self, text: str, objects: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], str] | str | None:
        """An inline patch that names no object this plan renders (a name the bases' prefix gives it),
        converted alone as a patch file is, with the other claims of the converted bases
        (translator.conversion.overlays); render verification judges it."""
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
        bases = [convert(copy.deepcopy(o), self.config).object for o in objects]
        summary = "device requests rewritten to claims"
        return complete_patch(edited, claims_of(bases, self.config), self.config), converted.templates, summary

    def _plan_file(self, kustomization: Kustomization, file: Path, patch: PatchFile) -> None:
        planned = self.files.get(file)
        if planned is not None and planned.text != patch.text:
            message = "the kustomizations that use this patch need different rewrites of it"
            self.problems.append(PatchProblem(kustomization, file, message))
            return
        self.files[file] = patch

    def _refuse_replacements(self, kustomization: Kustomization) -> None:
        if kustomization.path in self._replacements_checked:  # a component, once per kustomization using it
            return
        self._replacements_checked.add(kustomization.path)
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


# kustomize applies a kustomization's strategic-merge patches, then `patches`, then its JSON 6902 ones
_ORDER = ("patchesStrategicMerge", "patches", "patchesJson6902")


def _listed(data: dict[str, Any], keys: tuple[str, ...]) -> Iterator[str]:
    for key in keys:
        values = data.get(key)
        yield from (v for v in values if isinstance(v, str)) if isinstance(values, list) else ()


def strategic_entries(kustomization: Kustomization) -> list[PatchEntry]:
    """The entries of `patchesStrategicMerge`: a file, or the patch itself as a string."""
    out: list[PatchEntry] = []
    values = kustomization.data.get("patchesStrategicMerge")
    for index, value in enumerate(values if isinstance(values, list) else ()):
        if not isinstance(value, str):
            continue
        if "\n" not in value and len(value) < 4096:
            file = (kustomization.directory / value).resolve()
            if file in kustomization.files:
                out.append(PatchEntry("patchesStrategicMerge", index, None, file, None))
                continue
        out.append(PatchEntry("patchesStrategicMerge", index, None, None, value))
    return out


def _targets(entry: PatchEntry, patch: dict[str, Any], objects: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """What a strategic-merge patch applies to: its entry's `target` (whatever the patch's own name),
    else the object of its kind and name; None for a label or annotation selector."""
    if entry.target is None:
        return targets_of(patch, objects)
    chosen = [selects(entry.target, o) for o in objects]
    if any(c is None for c in chosen):
        return None
    return [o for o, c in zip(objects, chosen, strict=True) if c]


def _merge_each(objects: list[dict[str, Any]], entry: PatchEntry, text: str) -> list[dict[str, Any]]:
    """The objects with a strategic-merge patch applied as kustomize applies it (what it cannot
    model is left as it was: render verification judges the real render)."""
    try:
        patches = [d for d in kubeyaml.load_all(text) if isinstance(d, dict)]
    except (ValueError, yaml.YAMLError):
        return objects
    for patch in patches:
        targets = _targets(entry, patch, objects)
        if not targets:
            continue
        chosen = {id(t) for t in targets}
        try:
            objects = [merge(o, patch, is_keyed(o)) if id(o) in chosen else o for o in objects]
        except UnsupportedDirectiveError:
            continue
    return objects


def _apply_each(objects: list[dict[str, Any]], entry: PatchEntry, operations: list[Operation]) -> list[dict[str, Any]]:
    if entry.target is None:
        return objects
    out = []
    for obj in objects:
        if selects(entry.target, obj):
            patched = apply_as_kustomize(_with_annotations(obj) if entry.key == "patches" else obj, operations)
            out.append(patched if patched is not None else obj)
        else:
            out.append(obj)
    return out


def _with_annotations(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a `patches` entry's JSON 6902 operations see it: kustomize's own annotations
    (its file index) are in `metadata.annotations` while patches run, so an `add` below it applies
    where the object has none."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or isinstance(metadata.get("annotations"), dict):
        return obj
    return {**obj, "metadata": {**metadata, "annotations": {}}}
