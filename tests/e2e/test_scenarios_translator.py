"""Scenarios of the offline translator (`dra-migrate convert`) against the real control plane.

The translator's output must stand on its own: the webhook is not involved (it is not
registered in this module, and every namespace used here carries `dra-migrate.io/skip: "true"`,
which deploy/'s namespaceSelector excludes anyway).

- Every object of a kind the server serves is dry-run (`dryRun=All`, `fieldValidation=Strict`,
  like `kubectl apply --dry-run=server`). Objects of CRD kinds that are not installed (PyTorchJob,
  RayCluster, ...) are skipped, but the pod specs inside them are dry-run as Pods.
- A rejected converted object counts as a translator failure unless its INPUT is rejected too
  (then the corpus file was already invalid; it is listed, not failed).
- Real allocation (legacy corpus): converted Pods, Deployments and Jobs (plus CronJobs and
  StatefulSets, whose controllers do not run here: their pod template is created as a Pod) whose
  claims all come from generated templates for gpu.nvidia.com / mig.nvidia.com are created for
  real, each in its own namespace with the templates it uses. Skipped, with the reason listed:
  another scheduler (schedulerName), a PersistentVolumeClaim, node selection for labels the fake
  nodes lack, claims of other devices or of templates defined outside the corpus. An extra fake
  node offers the H100 MIG profile 1g.12gb that the corpus asks for.
- Each test writes its per-object verdicts to `<control plane log dir>/<test>.txt`.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS
from polling import wait_for

from .cluster_fixtures import (
    RESOURCE_API,
    FakeCluster,
    GpuModel,
    Kube,
    NvidiaDraNode,
    allocation_results,
    claims_owned_by,
    create_namespace,
    delete_namespace,
)
from .controlplane import ControlPlane
from .manifests import (
    ADMIN_ACCESS_LABEL,
    SKIP_LABEL,
    Answer,
    Conversion,
    Discovery,
    Rest,
    convert,
    dry_run,
    for_create,
    identity,
    label,
    match_outputs,
    pod_from_spec,
    pod_specs,
)

Obj = dict[str, Any]
LEGACY = CORPUS / "legacy"
DRA_VERSIONS = CORPUS / "dra-versions"
DEFAULT_NS = "<none>"


def _require(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(f"corpus {path} not present")
    return path


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Rest:
    return Rest(control_plane)


@pytest.fixture(scope="module")
def discovery(rest: Rest) -> Discovery:
    return Discovery.load(rest)


@pytest.fixture(scope="module")
def pod_fields(rest: Rest, discovery: Discovery) -> set[str]:
    return discovery.openapi_properties(rest, "io.k8s.api.core.v1.PodSpec")


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Conversion:
    run = convert(_require(LEGACY), tmp_path_factory.mktemp("convert") / "legacy")
    assert run.returncode == 0, f"dra-migrate convert failed: {run.stderr}"
    return run


@pytest.fixture(scope="module")
def dra_versions(tmp_path_factory: pytest.TempPathFactory) -> Conversion:
    run = convert(
        _require(DRA_VERSIONS), tmp_path_factory.mktemp("convert") / "dra-versions", "--target-version", "1.34"
    )
    # 2 = "something could not be converted": expected, the corpus holds classic-DRA objects.
    assert run.returncode == (2 if run.findings("error") else 0), f"exit {run.returncode}: {run.stderr}"
    return run


class ScratchNamespaces:
    """One fresh namespace per (source namespace, needs admin access), opted out of the webhook."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.created: dict[tuple[str, bool], str] = {}

    def get(self, source: str | None, admin_access: bool = False) -> str:
        key = (source or DEFAULT_NS, admin_access)
        if key not in self.created:
            name = create_namespace(self.kube, "e2e-tr")
            labels = {SKIP_LABEL: "true", **({ADMIN_ACCESS_LABEL: "true"} if admin_access else {})}
            self.kube.patch("v1", "Namespace", name, {"metadata": {"labels": labels}})
            self.created[key] = name
        return self.created[key]

    def delete_all(self) -> None:
        for name in self.created.values():
            delete_namespace(self.kube, name)


@pytest.fixture
def scratch(kube: Kube) -> Iterator[ScratchNamespaces]:
    namespaces = ScratchNamespaces(kube)
    try:
        yield namespaces
    finally:
        namespaces.delete_all()


# --------------------------------------------------------------------------- verdicts


@dataclass
class Verdicts:
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)  # (verdict, file, object, detail)

    def add(self, verdict: str, file: Path, obj: Mapping[str, Any], detail: str = "") -> None:
        self.rows.append((verdict, str(file), label(obj), " ".join(detail.split())))

    def of(self, verdict: str) -> list[tuple[str, str, str, str]]:
        return [row for row in self.rows if row[0] == verdict]

    def counts(self) -> dict[str, int]:
        return dict(collections.Counter(row[0] for row in self.rows))

    def write(self, path: Path) -> str:
        lines = [f"{v:<16} {f} :: {o}" + (f" :: {d}" if d else "") for v, f, o, d in sorted(self.rows)]
        summary = f"{len(self.rows)} objects: {self.counts()}"
        path.write_text(summary + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
        return summary


def _finish(verdicts: Verdicts, control_plane: ControlPlane, request: pytest.FixtureRequest) -> str:
    summary = verdicts.write(control_plane.log_dir / f"{request.node.name}.txt")
    print(f"{request.node.name}: {summary}")  # shown with -rP / -s
    return summary


def _failures(verdicts: Verdicts) -> str:
    return "\n".join(f"{f} :: {o}\n    {d}" for _, f, o, d in verdicts.of("REJECTED"))


# --------------------------------------------------------------------------- dry-run machinery


@dataclass
class DryRunner:
    rest: Rest
    discovery: Discovery
    pod_fields: set[str]
    scratch: ScratchNamespaces
    verdicts: Verdicts

    def namespace_for(self, obj: Mapping[str, Any], admin_access: bool = False) -> str:
        return self.scratch.get((obj.get("metadata") or {}).get("namespace"), admin_access)

    def send(self, obj: Mapping[str, Any], admin_access: bool = False) -> Answer | None:
        """Dry-run `obj` if its kind is served; None otherwise."""
        resource = self.discovery.find(obj)
        if resource is None:
            return None
        namespace = self.namespace_for(obj, admin_access) if resource.namespaced else None
        return dry_run(self.rest, resource, obj, namespace)

    def check(self, file: Path, original: Obj | None, converted: Obj, admin_access: bool = False) -> None:
        """Dry-run a served object; on rejection, dry-run its input to tell who is at fault."""
        answer = self.send(converted, admin_access)
        assert answer is not None
        if answer.ok:
            self.verdicts.add("accepted", file, converted, "; ".join(answer.warnings))
            return
        oracle = input_oracle(original, self.discovery) if original is not None else None
        before = self.send(oracle, admin_access) if oracle is not None else None
        if before is not None and not before.ok:
            self.verdicts.add("input-rejected", file, converted, f"input: {before.message} | output: {answer.message}")
        else:
            self.verdicts.add("REJECTED", file, converted, answer.message)

    def check_embedded(self, file: Path, original: Obj | None, converted: Obj) -> None:
        """A kind the server does not serve (a CRD): dry-run its pod specs as Pods."""
        specs = list(pod_specs(converted))
        originals = list(pod_specs(original)) if original is not None else []
        if not specs:
            self.verdicts.add("skipped", file, converted, "kind not served, no pod spec inside")
            return
        self.verdicts.add("skipped", file, converted, f"kind not served; {len(specs)} pod spec(s) dry-run as Pods")
        for index, (path, spec, metadata) in enumerate(specs):
            pod, dropped = pod_from_spec(converted, path, spec, metadata, self.pod_fields)
            pod["metadata"]["namespace"] = (converted.get("metadata") or {}).get("namespace")
            before_pod: Obj | None = None
            if index < len(originals) and original is not None:
                o_path, o_spec, o_meta = originals[index]
                before_pod, _ = pod_from_spec(original, o_path, o_spec, o_meta, self.pod_fields)
                before_pod["metadata"]["namespace"] = pod["metadata"]["namespace"]
            answer = self.send(pod)
            assert answer is not None
            where = f"{path} (not PodSpec fields dropped: {dropped})" if dropped else path
            if answer.ok:
                self.verdicts.add("accepted-pod", file, converted, where)
                continue
            before = self.send(before_pod) if before_pod is not None else None
            if before is not None and not before.ok:
                self.verdicts.add("input-rejected", file, converted, f"{where}: input: {before.message}")
            else:
                self.verdicts.add("REJECTED", file, converted, f"{where}: {answer.message}")


def input_oracle(original: Obj, discovery: Discovery) -> Obj | None:
    """The input as the server can read it: as is, or a resource.k8s.io/v1beta2 object relabelled
    v1 (the two versions have the same schema, so that is the identity conversion). None when
    the server cannot judge the input (older DRA versions have other shapes)."""
    if discovery.find(original) is not None:
        return original
    if original.get("apiVersion") == "resource.k8s.io/v1beta2":
        relabelled = {**original, "apiVersion": RESOURCE_API}
        return relabelled if discovery.find(relabelled) is not None else None
    return None


@pytest.fixture
def runner(rest: Rest, discovery: Discovery, pod_fields: set[str], scratch: ScratchNamespaces) -> DryRunner:
    return DryRunner(rest, discovery, pod_fields, scratch, Verdicts())


# --------------------------------------------------------------------------- 9a. legacy corpus, dry run


def test_legacy_corpus_translation_is_accepted_by_the_apiserver(
    legacy: Conversion, runner: DryRunner, control_plane: ControlPlane, request: pytest.FixtureRequest
) -> None:
    templates = 0
    for relative, inputs, outputs in legacy.pairs():
        assert outputs or not inputs, f"{relative}: no output written"
        for original, converted in match_outputs(inputs, outputs):
            if converted.get("kind") == "ResourceClaimTemplate" and original is None:
                templates += 1
            if runner.discovery.find(converted) is not None:
                runner.check(relative, original, converted)
            else:
                runner.check_embedded(relative, original, converted)
    summary = _finish(runner.verdicts, control_plane, request)

    assert templates == legacy.report["summary"]["templatesGenerated"], summary
    assert not runner.verdicts.of("REJECTED"), f"{summary}\n{_failures(runner.verdicts)}"
    accepted = [row for row in runner.verdicts.of("accepted") if "ResourceClaimTemplate" in row[2]]
    assert len(accepted) == templates, "every generated ResourceClaimTemplate must be dry-run and accepted"


# --------------------------------------------------------------------------- 10. DRA API versions, dry run


def _keyed_findings(run: Conversion, severity: str) -> dict[tuple[str, str, str | None, str], list[Obj]]:
    out: dict[tuple[str, str, str | None, str], list[Obj]] = {}
    for finding in run.findings(severity):
        if finding.get("document") is None:  # about a file as a whole (not-written), not an object
            continue
        relative = str(Path(finding["file"]).relative_to(run.source))
        key = (relative, str(finding["kind"]), finding.get("namespace"), str(finding["name"]))
        out.setdefault(key, []).append(finding)
    return out


def test_dra_versions_converted_to_v1_are_accepted(
    dra_versions: Conversion, runner: DryRunner, control_plane: ControlPlane, request: pytest.FixtureRequest
) -> None:
    errors = _keyed_findings(dra_versions, "error")
    warnings = _keyed_findings(dra_versions, "warning")
    files_with_errors = {key[0] for key in errors}
    for relative, inputs, outputs in dra_versions.pairs():
        for original, converted in match_outputs(inputs, outputs):
            kind, namespace, name = identity(converted)
            key = (str(relative), kind, namespace, name)
            if key not in errors and str(relative) in files_with_errors:
                # A file with an error is converted whole or not at all: copied as it was.
                verdict = "left-with-its-file" if original == converted else "REJECTED"
                runner.verdicts.add(verdict, relative, converted, "in a file with an error: left as is")
                continue
            if key in errors:
                # No automatic equivalent: the translator must leave the object exactly as it was.
                reasons = "; ".join(f"{f['rule']}: {f['message']}" for f in errors[key])
                if original == converted:
                    runner.verdicts.add("excluded", relative, converted, f"left as is ({reasons})")
                else:
                    runner.verdicts.add("REJECTED", relative, converted, f"ERROR finding but object changed: {reasons}")
                continue
            api_version = str(converted.get("apiVersion"))
            if runner.discovery.find(converted) is not None:
                admin = any(f["rule"] == "admin-access" for f in warnings.get(key, []))
                runner.check(relative, original, converted, admin_access=admin)
            elif not api_version.startswith("resource.k8s.io/"):
                runner.check_embedded(relative, original, converted)  # a vendor CRD
            elif "alpha" in api_version and (
                original == converted or any(f["rule"] == "api-off-by-default" for f in warnings.get(key, []))
            ):
                runner.verdicts.add(
                    "skipped",
                    relative,
                    converted,
                    f"{api_version} is an alpha API, off on this control plane (the translator warns so)",
                )
            else:
                runner.verdicts.add(
                    "REJECTED", relative, converted, f"{api_version} is not served and no ERROR finding says so"
                )
    summary = _finish(runner.verdicts, control_plane, request)

    assert not runner.verdicts.of("REJECTED"), f"{summary}\n{_failures(runner.verdicts)}"
    assert len(runner.verdicts.of("excluded")) == len(errors), summary
    assert runner.verdicts.of("accepted"), summary


# --------------------------------------------------------------------------- 9b. legacy corpus, real allocation

NVIDIA_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com")
# Created as they are (the deployment and replicaset controllers run here).
CONTROLLED_KINDS = {("v1", "Pod"), ("apps/v1", "Deployment")}
# No job/cronjob/statefulset controller runs here: their pod template is created as a Pod.
TEMPLATE_KINDS = {("batch/v1", "Job"), ("batch/v1", "CronJob"), ("apps/v1", "StatefulSet")}
PROFILE_SELECTOR = re.compile(r"""profile\s*==\s*["']([^"']+)["']""")
# The A100 nodes of the fake cluster offer 1g.5gb, 2g.10gb and 3g.20gb. The corpus also asks for
# 1g.12gb (NVIDIA's H100/H200 demo): one extra node with an H100 NVL MIG layout offers it.
H100_MIG_NODE = NvidiaDraNode(
    "dra-h100-mig-node-1",
    gpus=0,
    mig_parents=1,
    model=GpuModel(
        product_name="NVIDIA H100 NVL", architecture="Hopper", cuda_compute_capability="9.0.0", memory="94Gi"
    ),
    mig_profiles=(("1g.12gb", "12Gi"), ("1g.12gb", "12Gi"), ("2g.24gb", "24Gi"), ("3g.47gb", "47Gi")),
)

Device = tuple[str, str | None]  # ("gpu", None) or ("mig", profile)


@dataclass
class Workload:
    file: Path
    obj: Obj
    pod_spec: Obj
    pod_template: Obj  # {"metadata":..., "spec":...}
    templates: list[Obj]
    replicas: int
    demand: collections.Counter[Device]  # per pod

    @property
    def weight(self) -> tuple[int, int]:
        return (self.demand[("gpu", None)], sum(self.demand.values()))


def _pod_template(obj: Obj) -> Obj | None:
    kind = (obj.get("apiVersion"), obj.get("kind"))
    spec = obj.get("spec") or {}
    if kind == ("v1", "Pod"):
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if kind == ("batch/v1", "CronJob"):
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template")
    return template if isinstance(template, dict) and isinstance(template.get("spec"), dict) else None


def _device(request: Obj) -> tuple[Device, int] | None:
    exactly = request.get("exactly") or {}
    device_class = exactly.get("deviceClassName")
    if device_class not in NVIDIA_CLASSES or exactly.get("allocationMode", "ExactCount") != "ExactCount":
        return None
    if device_class == "gpu.nvidia.com":
        return ("gpu", None), int(exactly.get("count", 1))
    profiles = {m for s in exactly.get("selectors") or [] for m in PROFILE_SELECTOR.findall(s["cel"]["expression"])}
    return (("mig", profiles.pop()), int(exactly.get("count", 1))) if len(profiles) == 1 else None


def _fake_node_labels(fake_cluster: FakeCluster) -> list[dict[str, str]]:
    return [dict(spec.node_manifest()["metadata"]["labels"]) for spec in fake_cluster.nodes.values()]


def nvidia_workloads(run: Conversion, fake_cluster: FakeCluster, verdicts: Verdicts) -> list[Workload]:
    """Converted Pods/Deployments/Jobs (and CronJobs/StatefulSets) whose claims all target NVIDIA
    classes; those that cannot run on the fake cluster for reasons unrelated to DRA are listed."""
    workloads: list[Workload] = []
    templates: dict[tuple[str | None, str], Obj] = {}
    objects: list[tuple[Path, Obj]] = []
    for relative, _, outputs in run.pairs():
        for obj in outputs:
            if obj.get("kind") == "ResourceClaimTemplate":
                templates[((obj["metadata"]).get("namespace"), obj["metadata"]["name"])] = obj
            objects.append((relative, obj))
    for relative, obj in objects:
        kind = (obj.get("apiVersion"), obj.get("kind"))
        if kind not in CONTROLLED_KINDS | TEMPLATE_KINDS or (template := _pod_template(obj)) is None:
            continue
        spec = template["spec"]
        claims = spec.get("resourceClaims") or []
        namespace = (obj.get("metadata") or {}).get("namespace")
        used = [templates.get((namespace, str(c.get("resourceClaimTemplateName")))) for c in claims]
        requests = [r for t in used if t is not None for r in t["spec"]["spec"]["devices"]["requests"]]
        devices = [_device(r) for r in requests]
        if not claims or not any(d is not None for d in devices):
            continue  # not an NVIDIA GPU workload
        reason = ""
        if any(t is None for t in used):
            missing = [c["name"] for c, t in zip(claims, used, strict=True) if t is None]
            reason = f"claims {missing} use templates the corpus does not define"
        elif any(d is None for d in devices):
            reason = "also claims devices other than NVIDIA GPUs or MIG slices of one profile"
        elif any(".uuid in " in str((r.get("exactly") or r).get("selectors")) for r in requests):
            reason = "selects GPUs by UUID (HAMi's use-gpuuuid, as CEL), which the fake nodes do not have"
        elif spec.get("schedulerName", "default-scheduler") != "default-scheduler":
            reason = f"schedulerName {spec['schedulerName']} does not run here"
        elif any("persistentVolumeClaim" in v for v in spec.get("volumes") or []):
            reason = "needs a PersistentVolumeClaim (no storage here)"
        elif ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ):
            reason = "required node affinity for a real cluster's node labels"
        elif (selector := spec.get("nodeSelector")) and not any(
            selector.items() <= labels.items() for labels in _fake_node_labels(fake_cluster)
        ):
            reason = f"nodeSelector {selector} matches no fake node"
        if reason:
            verdicts.add("skipped", relative, obj, reason)
            continue
        demand: collections.Counter[Device] = collections.Counter()
        for found in devices:
            assert found is not None
            demand[found[0]] += found[1]
        replicas = int((obj.get("spec") or {}).get("replicas", 1)) if kind == ("apps/v1", "Deployment") else 1
        workloads.append(Workload(relative, obj, spec, template, _unique_templates(used), replicas, demand))
    return workloads


def _unique_templates(used: list[Obj | None]) -> list[Obj]:
    by_name = {t["metadata"]["name"]: t for t in used if t is not None}
    return list(by_name.values())


Capacity = dict[str, collections.Counter[Device]]


def _capacity(fake_cluster: FakeCluster) -> Capacity:
    free: Capacity = {}
    for name, spec in fake_cluster.nodes.items():
        if isinstance(spec, NvidiaDraNode):
            counter: collections.Counter[Device] = collections.Counter({("gpu", None): spec.gpus})
            for profile, _memory in spec.mig_profiles:
                counter[("mig", profile)] += spec.mig_parents
            free[name] = counter
    return free


def _place(free: Capacity, demand: collections.Counter[Device], replicas: int) -> bool:
    """First fit, on a copy: can every replica get all its devices from one node?"""
    trial = {node: counter.copy() for node, counter in free.items()}
    for _ in range(replicas):
        node = next((n for n, c in trial.items() if all(c[d] >= k for d, k in demand.items())), None)
        if node is None:
            return False
        trial[node].subtract(demand)
    return True


def _device_kind(fake_cluster: FakeCluster, result: Obj) -> Device:
    attributes = fake_cluster.device(result["driver"], result["pool"], result["device"])["attributes"]
    if attributes["type"]["string"] == "mig":
        return ("mig", attributes["profile"]["string"])
    return ("gpu", None)


def _instantiate(workload: Workload, namespace: str) -> Obj:
    obj = workload.obj
    if (obj.get("apiVersion"), obj.get("kind")) in CONTROLLED_KINDS:
        return for_create(obj, namespace)
    metadata = workload.pod_template.get("metadata") or {}
    pod_metadata = {k: metadata[k] for k in ("labels", "annotations") if metadata.get(k)}
    pod_metadata["generateName"] = f"{obj['metadata']['name']}-"
    pod_metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": workload.pod_spec}


@pytest.fixture
def h100_mig_node(fake_cluster: FakeCluster) -> Iterator[str]:
    fake_cluster.add(H100_MIG_NODE)
    try:
        yield H100_MIG_NODE.name
    finally:
        fake_cluster.remove(H100_MIG_NODE.name)


def test_legacy_corpus_nvidia_workloads_get_their_claims_allocated(
    legacy: Conversion,
    kube: Kube,
    fake_cluster: FakeCluster,
    h100_mig_node: str,
    control_plane: ControlPlane,
    request: pytest.FixtureRequest,
) -> None:
    """Created for real, without the webhook: the controller makes the claims, the scheduler
    allocates and binds. Each workload gets its own namespace (with the templates it uses);
    workloads are created biggest first and in waves that fit the devices still free."""
    verdicts = Verdicts()
    workloads = sorted(nvidia_workloads(legacy, fake_cluster, verdicts), key=lambda w: w.weight, reverse=True)
    assert workloads, "no NVIDIA workload in the converted corpus"
    pending = list(workloads)
    while pending:
        free = _capacity(fake_cluster)
        wave: list[tuple[Workload, str]] = []
        scratch = ScratchNamespaces(kube)
        try:
            for workload in list(pending):
                if not _place(free, workload.demand, workload.replicas):
                    continue
                pending.remove(workload)
                namespace = scratch.get(f"{workload.file}:{label(workload.obj)}")
                for template in workload.templates:
                    kube.create(for_create(template, namespace))
                kube.create(_instantiate(workload, namespace))
                wave.append((workload, namespace))
                free = _allocate(kube, fake_cluster, workload, namespace, free, verdicts)
            if not wave:  # nothing fits even an idle cluster
                for workload in pending:
                    verdicts.add("skipped", workload.file, workload.obj, f"needs {dict(workload.demand)} per pod")
                pending = []
        finally:
            scratch.delete_all()
    summary = _finish(verdicts, control_plane, request)

    failed = [row for row in verdicts.rows if row[0] == "NOT-ALLOCATED"]
    assert not failed, summary + "\n" + "\n".join(f"{f} :: {o}\n    {d}" for _, f, o, d in failed)
    assert len(verdicts.of("allocated")) >= 5, f"too few NVIDIA workloads exercised: {summary}"


def _allocate(
    kube: Kube, fake_cluster: FakeCluster, workload: Workload, namespace: str, free: Capacity, verdicts: Verdicts
) -> Capacity:
    """Wait until every pod of the workload is bound with all claims allocated; check the devices."""
    claims_per_pod = len(workload.pod_spec.get("resourceClaims") or [])

    def ready() -> list[tuple[Obj, list[Obj]]] | None:
        pods = kube.list("v1", "Pod", namespace)
        if len(pods) != workload.replicas or not all(p["spec"].get("nodeName") for p in pods):
            return None
        owned = [(p, claims_owned_by(kube, namespace, p)) for p in pods]
        done = all(len(c) == claims_per_pod and all(allocation_results(x) for x in c) for _, c in owned)
        return owned if done else None

    try:
        owned = wait_for(ready, what=f"{label(workload.obj)} to be bound with allocated claims", timeout=30)
    except AssertionError as err:
        conditions = [
            (p["metadata"]["name"], p.get("status", {}).get("conditions")) for p in kube.list("v1", "Pod", namespace)
        ]
        verdicts.add("NOT-ALLOCATED", workload.file, workload.obj, f"{err}; pods: {conditions}")
        return free
    details = []
    for pod, claims in owned:
        node = pod["spec"]["nodeName"]
        results = [r for c in claims for r in allocation_results(c)]
        got: collections.Counter[Device] = collections.Counter(_device_kind(fake_cluster, r) for r in results)
        assert got == workload.demand, f"{label(workload.obj)}: asked {dict(workload.demand)}, got {dict(got)}"
        assert all(fake_cluster.node_of_pool(r["driver"], r["pool"]) == node for r in results)
        free[node].subtract(got)
        details.append(f"{node}: {', '.join(sorted(r['device'] for r in results))}")
    kinds = "" if (workload.obj["apiVersion"], workload.obj["kind"]) in CONTROLLED_KINDS else " (pod template as a Pod)"
    verdicts.add("allocated", workload.file, workload.obj, f"{dict(workload.demand)}{kinds} -> {'; '.join(details)}")
    return free
