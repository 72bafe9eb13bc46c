"""The translator's `resource.k8s.io` conversions, object by object, against the apiserver's.

Runs on control planes that serve every `resource.k8s.io` version the release has
(`--runtime-config`, see ControlPlaneSpec). Subjects: every `resource.k8s.io` object of the
corpus's dra-versions tree, every ResourceClaimTemplate the translator generates for the legacy
corpus, and every DeviceClass it writes for it with `--strategy extendedResource --device-classes`.
Each subject is created once, as it is when the server serves its version, else as the
translator writes it for this release; then it is read back in every version the server
serves and compared with `dra-migrate convert --target-version T` for the target T that writes
that version (differential.py: normaliser and verdicts).

Verdicts that are not differences, each listed with its reason in `<log dir>/<test>.txt`:
- declined: the translator reports an error for that target and leaves the object as it was
  (e.g. a field the target release does not have);
- kept-version: the translator keeps the object's version for that target and a finding says
  why (DeviceTaintRule), or no target writes that version (v1alpha3);
- gate-off: the apiserver dropped a field whose feature gate is off by default in this release
  (`extendedResourceName` before 1.36, request `tolerations` before 1.36), as the translator warns;
- input-rejected: the apiserver refuses the corpus object itself (e.g. generated round-trip data);
- not-served: neither the object's version nor a translator output of it is served here
  (classic DRA).

A difference that is a known translator defect (KNOWN_DEFECTS) is listed as `known-defect`
and reported as a warning instead of failing the test; an entry that no longer matches anything
fails it, so the list shrinks as the defects are fixed.
"""

from __future__ import annotations

import collections
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from corpus import CORPUS

from dra_migrate.engine import RESOURCE_GROUP, Target, convert, default_config

from .cluster_fixtures import Kube, create_namespace, delete_namespace
from .controlplane import DRA_KINDS, ControlPlane
from .differential import (
    DEVICE_CLASSES_FILE,
    Key,
    Obj,
    TranslatorRun,
    Verdict,
    differences,
    is_dra,
    keyed,
    normalise,
    version_of,
    writing_targets,
)
from .manifests import ADMIN_ACCESS_LABEL, FIELD_MANAGER, ApiResource, Discovery, Rest, for_create, served_versions
from .manifests import convert as translate

pytestmark = pytest.mark.all_dra_versions


@dataclass(frozen=True)
class Source:
    """One translator input tree, converted once per target."""

    name: str
    tree: Path
    args: tuple[str, ...] = ()
    device_classes: bool = False


SOURCES = (
    Source("dra-versions", CORPUS / "dra-versions"),
    Source("legacy", CORPUS / "legacy"),
    Source("device-classes", CORPUS / "legacy", ("--strategy", "extendedResource"), device_classes=True),
)
# Translator defects this test found: every difference whose line holds all the texts of an entry.
KNOWN_DEFECTS: dict[tuple[str, ...], str] = {}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Rest:
    return Rest(control_plane)


@pytest.fixture(scope="module")
def discovery(rest: Rest) -> Discovery:
    return Discovery.load(rest)


@pytest.fixture(scope="module")
def translator_runs(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, TranslatorRun]]:
    """source -> version -> the translator's run for the target that writes that version."""
    runs: dict[str, dict[str, TranslatorRun]] = {}
    for source in SOURCES:
        if not source.tree.is_dir():
            pytest.skip(f"corpus {source.tree} not present")
        runs[source.name] = {}
        for version, target in writing_targets(control_plane.spec.target).items():
            out = tmp_path_factory.mktemp("differential") / f"{source.name}-{target}"
            classes = out.parent / "device-classes.yaml" if source.device_classes else None
            args = [*source.args, *(["--device-classes", str(classes)] if classes else [])]
            conversion = translate(source.tree, out, "--target-version", str(target), *args)
            assert conversion.returncode in (0, 2), f"convert {source.tree} for {target}: {conversion.stderr}"
            runs[source.name][version] = TranslatorRun.index(target, conversion, classes)
    return runs


@pytest.fixture
def scratch_namespace(kube: Kube) -> Iterator[str]:
    """Namespaced subjects go here; admin access allowed, as some corpus claims ask for it."""
    name = create_namespace(kube, "e2e-diff")
    kube.patch("v1", "Namespace", name, {"metadata": {"labels": {ADMIN_ACCESS_LABEL: "true"}}})
    try:
        yield name
    finally:
        delete_namespace(kube, name)


# --------------------------------------------------------------------------- served versions


def test_served_dra_versions_match_the_engine(discovery: Discovery, target: Target) -> None:
    """With every version switched on, each DRA kind is served in every version the engine's release
    table has for it. Serving a version needs only `--runtime-config`: the storage is registered
    whatever the feature gate says, which decides only whether the objects take effect."""
    for kind in DRA_KINDS:
        assert served_versions(discovery, kind) == sorted(target.release.served_versions(kind)), kind


# --------------------------------------------------------------------------- the differential


class Differential:
    def __init__(
        self,
        rest: Rest,
        discovery: Discovery,
        runs: dict[str, dict[str, TranslatorRun]],
        namespace: str,
        release: Target,
    ) -> None:
        self.rest = rest
        self.discovery = discovery
        self.runs = runs
        self.namespace = namespace
        self.release = release
        self.newest = release.dra_version  # the version this release's own target writes (v1)
        self.verdicts: list[Verdict] = []

    def subjects(self) -> Iterator[tuple[str, Key, Obj, bool]]:
        """(source, key, object, is the corpus input): dra-versions inputs, then the templates and
        DeviceClasses the translator writes for the legacy corpus (in this release's version)."""
        for relative, inputs, _ in self.runs["dra-versions"][self.newest].conversion.pairs():
            for key, obj in keyed(str(relative), inputs):
                if is_dra(obj):
                    yield "dra-versions", key, obj, True
        legacy = self.runs["legacy"][self.newest]
        for relative, inputs, outputs in legacy.conversion.pairs():
            originals = {key for key, _ in keyed(str(relative), inputs)}
            for key, obj in keyed(str(relative), outputs):
                if key not in originals and obj.get("kind") == "ResourceClaimTemplate":
                    yield "legacy", key, obj, False
        for key, obj in self.runs["device-classes"][self.newest].outputs.items():
            if key[0] == DEVICE_CLASSES_FILE:
                yield "device-classes", key, obj, False

    def resource(self, version: str, kind: str) -> ApiResource | None:
        return self.discovery.find({"apiVersion": f"{RESOURCE_GROUP}/{version}", "kind": kind})

    def check(self, source: str, key: Key, obj: Obj, is_input: bool) -> None:
        kind = key[1]
        stored = obj
        if self.resource(version_of(obj), str(obj.get("kind"))) is None:
            own = self.runs[source][self.newest]
            stored = own.outputs.get(key, obj)
            if own.errors_for(key) or self.resource(version_of(stored), kind) is None:
                reasons = "; ".join(own.errors_for(key)) or "no translator output in a served version"
                self.verdicts.append(Verdict("not-served", source, key, version_of(obj), reasons))
                return
        resource = self.resource(version_of(stored), kind)
        assert resource is not None
        namespace = self.namespace if resource.namespaced else None
        query = {"fieldValidation": "Strict", "fieldManager": FIELD_MANAGER}
        created = self.rest.request("POST", resource.path(namespace), query=query, body=for_create(stored, namespace))
        if not created.ok:
            outcome = "input-rejected" if stored is obj and is_input else "DIFFERENT"
            detail = f"create {version_of(stored)} refused: {created.message}"
            self.verdicts.append(Verdict(outcome, source, key, version_of(stored), detail))
            return
        name = str(created.body["metadata"]["name"])
        try:
            served = {v: self.read(kind, v, namespace, name) for v in served_versions(self.discovery, kind)}
        finally:
            self.rest.request("DELETE", resource.path(namespace, name))
        for version, got in served.items():
            self.compare(source, key, version, got)
        for version, got in served.items():
            for written, expected in served.items():
                self.compare_reading(source, key, version, got, written, expected)

    def read(self, kind: str, version: str, namespace: str | None, name: str) -> Obj:
        resource = self.resource(version, kind)
        assert resource is not None
        return self.rest.get(resource.path(namespace, name))

    def compare(self, source: str, key: Key, version: str, got: Obj) -> None:
        """The translator's output for the target writing `version` vs the apiserver's `version`."""
        run = self.runs[source].get(version)
        if run is None:  # a version no target writes (v1alpha3 DeviceTaintRule)
            self.verdicts.append(Verdict("kept-version", source, key, version, "no target writes this version"))
            return
        if errors := run.errors_for(key):
            self.verdicts.append(Verdict("declined", source, key, version, f"for {run.target}: {'; '.join(errors)}"))
            return
        expected = run.outputs.get(key)
        if expected is None:
            self.verdicts.append(Verdict("DIFFERENT", source, key, version, f"no translator output for {run.target}"))
            return
        if version_of(expected) != version:
            notes = run.warnings_for(key)
            if not notes:
                detail = f"for {run.target} the translator writes {expected.get('apiVersion')} and no finding says why"
                self.verdicts.append(Verdict("DIFFERENT", source, key, version, detail))
                return
            detail = f"for {run.target} the translator keeps {expected.get('apiVersion')}: {'; '.join(notes)}"
            self.verdicts.append(Verdict("kept-version", source, key, version, detail))
            return
        found = differences(normalise(expected), normalise(got))
        self.verdicts.append(self.judge(source, key, version, found, run))

    def judge(self, source: str, key: Key, version: str, found: list[str], run: TranslatorRun) -> Verdict:
        """equal; gate-off when every difference is a field this release drops (dropDisabledFields)
        because a feature gate is off here, and the translator warned that gate is off; else DIFFERENT."""
        if not found:
            return Verdict("equal", source, key, version)
        gates: set[str] = set()
        for difference in found:
            path = difference.split(":", 1)[0]
            warned = run.gates_warned(key, path)
            off_here = [gate for gate in warned if not self.release.feature_enabled(gate)]
            if not difference.endswith("apiserver has no such field") or not off_here:
                break
            gates.update(off_here)
        else:
            detail = f"{' | '.join(found)} ({', '.join(sorted(gates))} off by default in {self.release})"
            return Verdict("gate-off", source, key, version, detail)
        return Verdict("DIFFERENT", source, key, version, " | ".join(found))

    def compare_reading(self, source: str, key: Key, version: str, got: Obj, written: str, expected: Obj) -> None:
        """The engine reading the apiserver's own `version` output (as `kubectl get -o yaml` shows it)
        and writing it for the target of `written`, vs the apiserver's `written` output."""
        run = self.runs[source].get(written)
        if run is None or run.errors_for(key) or version_of(run.outputs.get(key) or {}) != written:
            return  # the translator declines or keeps the version for that target anyway (see compare)
        label = f"{version}->{written}"
        result = convert(got, default_config(str(run.target)))
        if result.has_errors or result.object is None:
            problems = "; ".join(f"{f.rule}: {f.message}" for f in result.problems)
            detail = f"reading the apiserver's {version}: {problems}"
            self.verdicts.append(Verdict("DIFFERENT", source, key, label, detail))
            return
        found = differences(normalise(result.object), normalise(expected))
        self.verdicts.append(self.judge(source, key, label, found, run))

    def write(self, path: Path) -> str:
        counts = collections.Counter(v.outcome for v in self.verdicts)
        summary = f"{len(self.verdicts)} comparisons: {dict(sorted(counts.items()))}"
        lines = sorted(v.line() for v in self.verdicts)
        path.write_text(summary + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
        return summary


def test_translator_conversions_match_the_apiserver(
    rest: Rest,
    discovery: Discovery,
    translator_runs: dict[str, dict[str, TranslatorRun]],
    scratch_namespace: str,
    control_plane: ControlPlane,
    request: pytest.FixtureRequest,
) -> None:
    differential = Differential(rest, discovery, translator_runs, scratch_namespace, control_plane.spec.target)
    for subject in differential.subjects():
        differential.check(*subject)
    summary = differential.write(control_plane.log_dir / f"{request.node.name}.txt")
    print(f"{request.node.name}: {summary}")

    outcomes = collections.Counter(v.outcome for v in differential.verdicts)
    lines = [v.line() for v in differential.verdicts if v.outcome == "DIFFERENT"]
    known = {texts: [line for line in lines if all(t in line for t in texts)] for texts in KNOWN_DEFECTS}
    for texts, matched in known.items():
        if matched:
            message = f"known translator defect, {KNOWN_DEFECTS[texts]}: {len(matched)} x, e.g. {matched[0]}"
            warnings.warn(message, stacklevel=1)
    different = [line for line in lines if not any(line in matched for matched in known.values())]
    assert not different, summary + "\n" + "\n".join(different)
    fixed = [KNOWN_DEFECTS[texts] for texts, matched in known.items() if not matched]
    assert not fixed, f"known defects no longer seen (remove them from KNOWN_DEFECTS): {fixed}"
    # Every version served is compared somewhere, and most objects survive every version.
    assert {v.version for v in differential.verdicts if v.outcome == "equal"} >= {"v1beta1", "v1beta2", "v1"}, summary
    assert outcomes["equal"] >= 100, summary
