"""Differential check of the translator's `resource.k8s.io` conversions against the apiserver's own.

For each object the apiserver stores it once (in a version it serves) and returns it in every
version it serves; the translator converts the same object for the target release that writes
each version (`Target.dra_version`: 1.32 writes v1beta1, 1.33 v1beta2, 1.34+ v1). Both sides
go through one normaliser, `normalise`, which removes only what the apiserver adds on its own:

- server-owned metadata (uid, resourceVersion, generation, creationTimestamp, managedFields) and
  the namespace (objects are created in a scratch namespace); `status` (ignored on create);
- defaulted request fields: `allocationMode: ExactCount`, and `count: 1` in ExactCount mode
  (requests, `exactly`, `firstAvailable` subrequests; `SetDefaults_*` in pkg/apis/resource);
- `operator: Equal` of device tolerations (`+default="Equal"`);
- `timeAdded` of device taints (set to the time of the write when absent);
- empty values (null, "", [], {}) anywhere: Kubernetes reads them as unset, and the apiserver
  writes or omits each one by its field's encoding (`deviceClassName: ""` next to
  `firstAvailable` in v1beta1, always `metadata: {}` in a ResourceClaimTemplate's spec, no
  `requests: []` in a constraint).

Everything else that differs is reported with its path.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_migrate.engine import RESOURCE_GROUP, Target

from .manifests import SERVER_METADATA, Conversion, documents, identity

Obj = dict[str, Any]
Key = tuple[str, str, str | None, str, int]  # (file, kind, namespace, name, occurrence)
_REQUEST_LISTS = ("requests", "firstAvailable")


# --------------------------------------------------------------------------- targets


def version_of(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]


def writing_targets(newest: Target) -> dict[str, Target]:
    """Version -> the newest target up to `newest` whose translator output is in that version."""
    targets: dict[str, Target] = {}
    for minor in range(32, newest.minor + 1):
        target = Target.parse(f"{newest.major}.{minor}")
        targets[target.dra_version] = target
    return targets


# --------------------------------------------------------------------------- normaliser


def _strip_request_defaults(request: Obj) -> None:
    if request.get("allocationMode", "ExactCount") == "ExactCount":
        request.pop("allocationMode", None)
        if request.get("count") == 1:
            request.pop("count")
    for toleration in request.get("tolerations") or []:
        if isinstance(toleration, dict) and toleration.get("operator") == "Equal":
            toleration.pop("operator")


def _strip_claim_spec_defaults(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for request in (devices or {}).get("requests") or []:
        if not isinstance(request, dict):
            continue
        _strip_request_defaults(request)
        if isinstance(request.get("exactly"), dict):
            _strip_request_defaults(request["exactly"])
        for sub in request.get("firstAvailable") or []:
            if isinstance(sub, dict):
                _strip_request_defaults(sub)


def _strip_taint_times(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("taint", "taints"):
                for taint in value if isinstance(value, list) else [value]:
                    if isinstance(taint, dict):
                        taint.pop("timeAdded", None)
            else:
                _strip_taint_times(value)
    elif isinstance(node, list):
        for item in node:
            _strip_taint_times(item)


def _without_empty(node: Any) -> Any:
    if isinstance(node, dict):
        kept = {k: _without_empty(v) for k, v in node.items()}
        return {k: v for k, v in kept.items() if not _empty(v)}
    if isinstance(node, list):
        return [_without_empty(item) for item in node]
    return node


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def normalise(obj: Mapping[str, Any]) -> Obj:
    """A copy without what the apiserver adds by itself (see the module docstring)."""
    out: Obj = _without_empty(copy.deepcopy(dict(obj)))
    out.pop("status", None)
    metadata = out.get("metadata") or {}
    for key in (*SERVER_METADATA, "namespace"):
        metadata.pop(key, None)
    if out.get("kind") == "ResourceClaim":
        _strip_claim_spec_defaults(out.get("spec"))
    elif out.get("kind") == "ResourceClaimTemplate":
        _strip_claim_spec_defaults((out.get("spec") or {}).get("spec"))
    _strip_taint_times(out.get("spec"))
    return out


def differences(expected: Any, got: Any, path: str = "") -> list[str]:
    """Paths where two JSON values differ, with both values."""
    if isinstance(expected, dict) and isinstance(got, dict):
        out: list[str] = []
        for key in sorted(set(expected) | set(got)):
            sub = f"{path}.{key}"
            if key not in got:
                out.append(f"{sub}: translator {_show(expected[key])}, apiserver has no such field")
            elif key not in expected:
                out.append(f"{sub}: translator has no such field, apiserver {_show(got[key])}")
            else:
                out += differences(expected[key], got[key], sub)
        return out
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        pairs = enumerate(zip(expected, got, strict=True))
        return [d for index, (e, g) in pairs for d in differences(e, g, f"{path}[{index}]")]
    if expected != got or type(expected) is not type(got):
        return [f"{path or '.'}: translator {_show(expected)}, apiserver {_show(got)}"]
    return []


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


# --------------------------------------------------------------------------- translator runs


DEVICE_CLASSES_FILE = "<--device-classes>"


@dataclass
class TranslatorRun:
    """`dra-migrate convert --target-version T` over one tree, indexed by object; the DeviceClasses
    of `--device-classes` count as the outputs of a file named DEVICE_CLASSES_FILE."""

    target: Target
    conversion: Conversion
    outputs: dict[Key, Obj] = field(default_factory=dict)
    findings: dict[str, dict[Key, list[str]]] = field(default_factory=dict)  # severity -> key -> texts
    # key -> ".path" of a field the translator warned a feature gate it needs is off -> those gates
    gated: dict[Key, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    # file -> why it was left as it was (a file with an error is converted whole or not at all)
    files_left: dict[str, str] = field(default_factory=dict)

    @classmethod
    def index(cls, target: Target, conversion: Conversion, device_classes: Path | None = None) -> TranslatorRun:
        run = cls(target, conversion)
        for relative, _, outputs in conversion.pairs():
            for key, obj in keyed(str(relative), outputs):
                run.outputs[key] = obj
        if device_classes is not None:
            # a run that leaves no name to KEP-5004 writes no file (an existing one is left as it was)
            written = documents(device_classes) if device_classes.exists() else []
            run.outputs.update(keyed(DEVICE_CLASSES_FILE, written))
        # The report does not tell same-named documents apart: findings count for occurrence 0.
        for severity in ("error", "warning"):
            found = run.findings.setdefault(severity, {})
            for finding in conversion.findings(severity):
                if finding.get("file") and finding.get("document") is None:
                    if finding["rule"] == "not-written":
                        file = str(Path(finding["file"]).relative_to(conversion.source))
                        run.files_left[file] = f"not-written: {finding['message']}"
                    continue
                where = _finding_key(finding, conversion.source)
                if where is not None:
                    found.setdefault(where, []).append(f"{finding['rule']}: {finding['message']}")
                    if finding["rule"] == "feature-gate-off" and (gates := _gates_named(str(finding["message"]))):
                        run.gated.setdefault(where, {})[f".{finding['path']}"] = gates
        return run

    def errors_for(self, key: Key) -> list[str]:
        left = [self.files_left[key[0]]] if key[0] in self.files_left else []
        return self.findings["error"].get((*key[:4], 0), left)

    def warnings_for(self, key: Key) -> list[str]:
        return self.findings["warning"].get((*key[:4], 0), [])

    def gates_warned(self, key: Key, path: str) -> tuple[str, ...]:
        """The feature gates a feature-gate-off warning of this object names for the field at `path`
        (the warning's path is the input's: when the conversion moved the field, its name must match)."""
        warned = self.gated.get((*key[:4], 0), {})
        if path in warned:
            return warned[path]
        name = path.rsplit(".", 1)[-1]
        return tuple(gate for where, gates in warned.items() if where.rsplit(".", 1)[-1] == name for gate in gates)


_GATES_NEEDED = re.compile(r"needs feature gate (\w+(?: and \w+)*) \(")


def _gates_named(message: str) -> tuple[str, ...]:
    match = _GATES_NEEDED.search(message)
    return tuple(match.group(1).split(" and ")) if match else ()


def keyed(relative: str, objects: list[Obj]) -> Iterator[tuple[Key, Obj]]:
    """Objects of one file with a key that survives conversion: kind (ResourceClass counts as
    DeviceClass), namespace, name and the how-many-th object of that identity it is."""
    seen: dict[tuple[str, str | None, str], int] = {}
    for obj in objects:
        kind, namespace, name = identity(obj)
        kind = "DeviceClass" if kind == "ResourceClass" else kind
        occurrence = seen.get((kind, namespace, name), 0)
        seen[(kind, namespace, name)] = occurrence + 1
        yield (relative, kind, namespace, name, occurrence), obj


def is_dra(obj: Mapping[str, Any]) -> bool:
    return str(obj.get("apiVersion", "")).startswith(f"{RESOURCE_GROUP}/")


# --------------------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Verdict:
    outcome: str  # equal | DIFFERENT | declined | kept-version | gate-off | input-rejected | not-served
    source: str
    key: Key
    version: str = ""
    detail: str = ""

    @property
    def subject(self) -> str:
        file, kind, namespace, name, occurrence = self.key
        where = f"{namespace}/" if namespace else ""
        extra = f" #{occurrence + 1}" if occurrence else ""
        return f"{self.source}/{file} :: {kind} {where}{name}{extra}"

    def line(self) -> str:
        version = f" [{self.version}]" if self.version else ""
        return f"{self.outcome:<14} {self.subject}{version}" + (f" :: {self.detail}" if self.detail else "")


def _finding_key(finding: dict[str, Any], source: Path) -> tuple[str, str, str | None, str, int] | None:
    """Where a report row belongs: its file's document, or for a run-level row about a DeviceClass
    of --device-classes ("DeviceClass <name>: ..."), that file's class; other run-level rows nowhere."""
    if finding.get("file"):
        file = str(Path(finding["file"]).relative_to(source))
        namespace = finding.get("namespace")
        return file, str(finding["kind"]), str(namespace) if namespace else None, str(finding["name"]), 0
    message = str(finding.get("message", ""))
    if message.startswith("DeviceClass ") and ":" in message:
        return DEVICE_CLASSES_FILE, "DeviceClass", None, message[len("DeviceClass ") :].split(":", 1)[0], 0
    return None
