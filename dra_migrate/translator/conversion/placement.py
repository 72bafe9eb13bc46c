"""Writing generated ResourceClaimTemplates into a templates file and wiring it into a kustomization;
generated DeviceClasses into the --device-classes file.

Such a file is merged, never replaced: objects and comments already there stay byte for byte, new
ones are appended, and a template generated under a name the file already uses for another spec is
an error that leaves the file's version in place (a DeviceClass: a warning, the file's is kept).
"""

from __future__ import annotations

from typing import Any

import yaml

from dra_migrate.manifests.yamltext import edit_document, kubeyaml
from dra_migrate.translator.conversion.registry import TemplateKey, describe_key, same_template, template_key
from dra_migrate.translator.reading.inputs import newline_of


class Merged:
    __slots__ = ("added", "conflicts", "error", "text")

    def __init__(self, text: str, error: str | None = None) -> None:
        self.text = text
        self.added = 0
        self.conflicts: list[str] = []  # messages
        self.error = error  # the existing file could not be read as YAML: nothing written


def existing_templates(text: str) -> dict[TemplateKey, dict[str, Any]]:
    found: dict[TemplateKey, dict[str, Any]] = {}
    for obj in kubeyaml.load_all(text):
        items = obj.get("items") if isinstance(obj, dict) and obj.get("kind") == "List" else [obj]
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("kind") == "ResourceClaimTemplate":
                found.setdefault(template_key(item), item)
    return found


def merge_templates(existing_text: str, templates: list[dict[str, Any]], newline: str = "\n") -> Merged:
    """`existing_text` with the templates it does not hold yet appended as documents, in its line
    endings (a new file's: `newline`, those of the kustomization that lists it)."""
    try:
        present = existing_templates(existing_text)
    except yaml.YAMLError as exc:
        return Merged(existing_text, error=f"cannot add templates: the file is not valid YAML ({exc})")
    merged = Merged(existing_text)
    pieces: list[str] = []
    for template in templates:
        key = template_key(template)
        if key in present:
            if not same_template(present[key], template):
                merged.conflicts.append(
                    f"ResourceClaimTemplate {describe_key(key)} is already in this file with another spec; "
                    "kept as it is, so workloads converted to use it would get other devices than they asked for"
                )
            continue
        present[key] = template
        pieces.append(f"---\n{kubeyaml.dump(template)}")
        merged.added += 1
    merged.text = _appended(existing_text, pieces, newline)
    return merged


def merge_device_classes(existing_text: str, classes: list[dict[str, Any]]) -> Merged:
    """`existing_text` with the DeviceClasses it does not name yet appended; a name it holds with
    another spec is kept as the file has it (a conflict: the user's edit wins)."""
    try:
        present = {
            str((obj.get("metadata") or {}).get("name")): obj
            for obj in kubeyaml.load_all(existing_text)
            if isinstance(obj, dict) and obj.get("kind") == "DeviceClass"
        }
    except (ValueError, yaml.YAMLError) as exc:
        return Merged(existing_text, error=f"cannot add DeviceClasses: the file is not valid YAML ({exc})")
    merged = Merged(existing_text)
    pieces: list[str] = []
    for device_class in classes:
        name = str(device_class["metadata"]["name"])
        if name in present:
            if present[name].get("spec") != device_class.get("spec"):
                merged.conflicts.append(f"DeviceClass {name} is already in this file with another spec; kept as it is")
            continue
        present[name] = device_class
        pieces.append(f"---\n{kubeyaml.dump(device_class)}")
        merged.added += 1
    merged.text = _appended(existing_text, pieces)
    return merged


def _appended(existing_text: str, pieces: list[str], newline: str = "\n") -> str:
    if not pieces:
        return existing_text
    nl = newline_of(existing_text) if existing_text else newline
    body = "".join(pieces)
    lead = "" if not existing_text or existing_text.endswith("\n") else nl
    return existing_text + lead + (body.replace("\n", nl) if nl != "\n" else body)


def add_resource(kustomization_text: str, data: dict[str, Any], entry: str) -> str | None:
    """The kustomization with `entry` appended to `resources:` (comments kept); None if listed already."""
    resources = data.get("resources")
    if isinstance(resources, list) and entry in resources:
        return None
    new = {**data, "resources": [*(resources if isinstance(resources, list) else []), entry]}
    return edit_document(kustomization_text, data, new).text
