"""Manifests against the real apiserver: server-side dry runs, discovery, pod specs inside CRDs.

Dry runs go through plain HTTPS (not the python client's dynamic API, which cannot pass
`fieldValidation`): every object is sent with `dryRun=All&fieldValidation=Strict`, as
`kubectl apply --dry-run=server` does (kubectl validates strictly by default), so an unknown
or misspelled field the translator might write is an error, not a silently dropped value.
An object that already exists (a DeviceClass of the fake cluster, kube-system) is dry-run
with a server-side apply patch instead of a create.
"""

from __future__ import annotations

import copy
import json
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .controlplane import ControlPlane
from .webhook_process import dra_migrate

Obj = dict[str, Any]
FIELD_MANAGER = "dra-migrate-e2e"
SKIP_LABEL = "dra-migrate.io/skip"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
# Fields the server owns; a create must not carry them (round-trip fixtures do).
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)


# --------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class Answer:
    status: int
    body: Obj
    warnings: list[str]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        return str(self.body.get("message") or self.body)

    @property
    def reason(self) -> str:
        return str(self.body.get("reason") or "")


def _warnings(headers: Any) -> list[str]:
    """`Warning: 299 - "text"` headers -> texts."""
    out = []
    for value in headers.get_all("Warning") or []:
        text = value.split(" ", 2)[-1] if value.startswith("299 ") else value
        out.append(text.strip().strip('"'))
    return out


class Rest:
    """Admin HTTPS access to the control plane's apiserver."""

    def __init__(self, plane: ControlPlane) -> None:
        self.server = plane.server
        self.context: ssl.SSLContext = plane.admin_tls_context()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Answer:
        url = self.server + path + ("?" + urllib.parse.urlencode(dict(query)) if query else "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                raw = response.read()
                return Answer(int(response.status), _json(raw), _warnings(response.headers))
        except urllib.error.HTTPError as err:
            return Answer(err.code, _json(err.read()), _warnings(err.headers))

    def get(self, path: str) -> Obj:
        answer = self.request("GET", path)
        assert answer.ok, f"GET {path}: {answer.status} {answer.message}"
        return answer.body


def _json(raw: bytes) -> Obj:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {"message": raw.decode(errors="replace")}
    return value if isinstance(value, dict) else {"value": value}


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class ApiResource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None, name: str | None = None) -> str:
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{root}{scope}/{self.plural}" + (f"/{name}" if name else "")


@dataclass
class Discovery:
    """(apiVersion, kind) -> resource, for every group version the server serves."""

    resources: dict[tuple[str, str], ApiResource] = field(default_factory=dict)

    @classmethod
    def load(cls, rest: Rest) -> Discovery:
        discovery = cls()
        versions = ["v1"]
        for group in rest.get("/apis").get("groups") or []:
            versions += [v["groupVersion"] for v in group.get("versions") or []]
        for version in versions:
            listing = rest.get("/api/v1" if version == "v1" else f"/apis/{version}")
            for resource in listing.get("resources") or []:
                if "/" in resource["name"]:
                    continue  # subresource
                key = (version, resource["kind"])
                discovery.resources[key] = ApiResource(
                    version, resource["kind"], resource["name"], bool(resource["namespaced"])
                )
        return discovery

    def find(self, obj: Mapping[str, Any]) -> ApiResource | None:
        return self.resources.get((str(obj.get("apiVersion")), str(obj.get("kind"))))

    def openapi_properties(self, rest: Rest, definition: str) -> set[str]:
        """Property names of a core/v1 schema, e.g. io.k8s.api.core.v1.PodSpec."""
        schema = rest.get("/openapi/v3/api/v1")["components"]["schemas"][definition]
        return set(schema.get("properties") or {})


def served_versions(discovery: Discovery, kind: str, group: str = "resource.k8s.io") -> list[str]:
    """The versions of `group` that serve `kind`, sorted by name."""
    return sorted(v.rsplit("/", 1)[1] for (v, k) in discovery.resources if k == kind and v.startswith(f"{group}/"))


# --------------------------------------------------------------------------- dry runs


def for_create(obj: Mapping[str, Any], namespace: str | None) -> Obj:
    """A copy to send: server-owned metadata removed, namespace set (for namespaced kinds)."""
    out = copy.deepcopy(dict(obj))
    metadata = out.setdefault("metadata", {})
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    out.pop("status", None)
    if namespace is None:
        metadata.pop("namespace", None)
    else:
        metadata["namespace"] = namespace
    return out


def dry_run(rest: Rest, resource: ApiResource, obj: Mapping[str, Any], namespace: str | None) -> Answer:
    """Server-side dry run with strict field validation: create, or apply when it already exists."""
    body = for_create(obj, namespace if resource.namespaced else None)
    query = {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": FIELD_MANAGER}
    answer = rest.request("POST", resource.path(namespace), query=query, body=body)
    name = body["metadata"].get("name")
    if answer.status == 409 and answer.reason == "AlreadyExists" and name:
        answer = rest.request(
            "PATCH",
            resource.path(namespace, name),
            query={**query, "force": "true"},
            body=body,
            content_type="application/apply-patch+yaml",
        )
    return answer


# --------------------------------------------------------------------------- files and documents


def documents(path: Path) -> list[Obj]:
    """The objects of a YAML/JSON file, `kind: List` items flattened, empty documents dropped."""
    out: list[Obj] = []
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if not isinstance(document, dict):
            continue
        if document.get("kind") == "List" and isinstance(document.get("items"), list):
            out += [item for item in document["items"] if isinstance(item, dict)]
        else:
            out.append(document)
    return out


def identity(obj: Mapping[str, Any]) -> tuple[str, str | None, str]:
    metadata = obj.get("metadata") or {}
    return str(obj.get("kind")), metadata.get("namespace"), str(metadata.get("name") or metadata.get("generateName"))


def label(obj: Mapping[str, Any]) -> str:
    kind, namespace, name = identity(obj)
    return f"{obj.get('apiVersion')} {kind} {namespace + '/' if namespace else ''}{name}"


@dataclass(frozen=True)
class Conversion:
    """One `dra-migrate convert --report json -o OUT SRC` run."""

    source: Path
    output: Path
    returncode: int
    report: Obj
    stderr: str

    def pairs(self) -> Iterator[tuple[Path, list[Obj], list[Obj]]]:
        """(relative path, input objects, output objects) per input file."""
        for src in sorted(p for p in self.source.rglob("*") if p.is_file() and p.suffix in {".yaml", ".yml", ".json"}):
            relative = src.relative_to(self.source)
            out = self.output / relative
            yield relative, documents(src), documents(out) if out.exists() else []

    def findings(self, severity: str) -> list[Obj]:
        return [f for f in self.report.get("findings") or [] if f.get("severity") == severity]


def convert(source: Path, output: Path, *args: str) -> Conversion:
    report_file = output.parent / f"{output.name}-report.json"
    result = dra_migrate(
        "convert",
        *args,
        "--report",
        "json",
        "--report-file",
        str(report_file),
        "--output-dir",
        str(output),
        str(source),
    )
    report = json.loads(report_file.read_text(encoding="utf-8")) if report_file.exists() else {}
    return Conversion(source, output, result.returncode, report, result.stderr)


def match_outputs(inputs: list[Obj], outputs: list[Obj]) -> list[tuple[Obj | None, Obj]]:
    """Pair each output object with its input (same kind, namespace and name, in order); new ones get None."""
    pool: dict[tuple[str, str | None, str], list[Obj]] = {}
    for obj in inputs:
        pool.setdefault(identity(obj), []).append(obj)
    return [(pool[identity(o)].pop(0) if pool.get(identity(o)) else None, o) for o in outputs]


# --------------------------------------------------------------------------- pod specs inside other kinds


def pod_specs(obj: Any, path: str = "") -> Iterator[tuple[str, Obj, Obj]]:
    """(path, pod spec, template metadata) for every dict with a list of named `containers`."""
    if isinstance(obj, dict):
        containers = obj.get("containers")
        if isinstance(containers, list) and containers and all(isinstance(c, dict) and "name" in c for c in containers):
            yield path, obj, {}
            return
        for key, value in obj.items():
            if key == "spec" and isinstance(value, dict) and isinstance(obj.get("metadata"), dict):
                for sub_path, spec, metadata in pod_specs(value, f"{path}.spec"):
                    yield sub_path, spec, metadata or obj["metadata"]
            else:
                yield from pod_specs(value, f"{path}.{key}")
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            yield from pod_specs(item, f"{path}[{index}]")


def pod_from_spec(
    owner: Mapping[str, Any], spec_path: str, spec: Mapping[str, Any], metadata: Mapping[str, Any], pod_fields: set[str]
) -> tuple[Obj, list[str]]:
    """A Pod carrying an embedded pod spec; keys that are not PodSpec fields (the CRD's own) are dropped."""
    kept = {k: copy.deepcopy(v) for k, v in spec.items() if k in pod_fields}
    dropped = sorted(set(spec) - pod_fields)
    pod_metadata: Obj = {"generateName": f"{str(owner.get('kind')).lower()}-"}
    for key in ("labels", "annotations"):
        if isinstance(metadata.get(key), dict):
            pod_metadata[key] = copy.deepcopy(metadata[key])
    pod_metadata.setdefault("annotations", {})["e2e.dra-migrate.io/from"] = f"{label(owner)} {spec_path}"[:250]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": kept}, dropped


def kubectl_kustomize(plane: ControlPlane, directory: Path) -> list[Obj]:
    built = plane.kubectl("kustomize", str(directory)).stdout
    return [d for d in yaml.safe_load_all(built) if isinstance(d, dict)]


def run_text(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
