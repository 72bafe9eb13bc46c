"""The engine over the real-manifest corpus in /work/shared/corpus (see its README.md and SOURCES.tsv).

* legacy/: converts without errors, the output validates for Kubernetes 1.34 (strict), GPU workloads change,
  and the device counts are kept;
* negative/: nothing that is not a pod template is rewritten;
* dra-versions/: resource.k8s.io objects convert for 1.34 (and the v1 ones down to 1.32), or give an error
  exactly where docs/dra-api.md 2.7 (or an invalid input) says there is no automatic equivalent.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import corpus
import pytest
from corpus import CORPUS
from engine_support import (
    T132,
    T134,
    DeviceKey,
    as_pod,
    check_invariant,
    converted,
    corpus_files,
    error_keys,
    errors,
    findings,
    iter_containers,
    load_documents,
    parse_count,
    schema_errors,
)
from example_driver import example_driver_config

from dra_migrate.engine import (
    Config,
    ConversionResult,
    DeviceRequestSpec,
    Severity,
    convert,
    default_config,
    is_extended_resource,
    json_path,
)
from dra_migrate.manifests.schema import validate_object

corpus.require_module()

# The corpus includes the dra-example-driver's own demo (`example.com/gpu`), converted with a test mapping.
CONFIG = example_driver_config()

# --- legacy -----------------------------------------------------------------------------------------------

LEGACY = corpus_files("legacy")

# Documents allowed to produce ERROR findings: none today. Entries would be
# {file name: {(rule, path), ...}} with the reason in a comment (for example a placeholder quantity).
EXPECTED_LEGACY_ERRORS: dict[str, set[tuple[str, str]]] = {}

# Upstream manifests that are invalid before conversion: (path of the offending field, reason).
UPSTREAM_INVALID: dict[str, tuple[tuple[str, ...], str]] = {
    "NVIDIA__gpu-operator__assets__state-device-plugin-validation__cuda-vector-add.yaml": (
        ("spec", "readOnlyRootFilesystem"),
        "upstream puts readOnlyRootFilesystem at pod level (it is a container securityContext field)",
    ),
}

# Files whose GPU/accelerator requests are deliberately left as device-plugin requests, grouped by reason.
# Each must still say so through a finding (never silently).
_INTEL_DP = "intel__intel-device-plugins-for-kubernetes__"
_LEFT_AS_IS_GROUPS: dict[str, list[str]] = {
    "HAMi vGPU shares (gpumem/gpucores/gpumem-percentage) keep nvidia.com/gpu in that container": [
        "Project-HAMi__HAMi__benchmarks__deployments__job-on-hami.yml",
        "Project-HAMi__HAMi__examples__nvidia__default_use.yaml",
        "Project-HAMi__HAMi__examples__nvidia__use_sharing_card.yaml",
        "Project-HAMi__HAMi__examples__nvidia__vllm_cross_vgpu.yaml",
        "kubernetes-sigs__kueue__site__static__examples__serving-workloads__sample-hami.yaml",
    ],
    "TrainJob asks for devices in resourcesPerNode, not a pod template: reported, not rewritten": [
        "kubeflow__trainer__examples__flux__lammps-train-gpus.yaml",
    ],
    "aws.amazon.com/neuroncore is a core count, not a device count": [
        "Project-HAMi__HAMi__examples__awsneuron__multi_containers.yaml",
    ],
    "no built-in mapping (Enflame, Cambricon, Intel DLB/DSA/NPU/FPGA/QAT): warned as unmapped": [
        "Project-HAMi__HAMi__examples__enflame__vgcu_use.yaml",
        "Project-HAMi__HAMi__examples__mlu__default_use.yaml",
        _INTEL_DP + "demo__dlb-libdlb-demo-pod.yaml",
        _INTEL_DP + "demo__dsa-accel-config-demo-pod.yaml",
        _INTEL_DP + "demo__intel-npu-workload.yaml",
        _INTEL_DP + "demo__intelfpga-job.yaml",
        _INTEL_DP + "demo__openssl-qat-engine-pod.yaml",
        _INTEL_DP + "deployments__qat_dpdk_app__crypto-perf__crypto-perf-dpdk-pod-requesting-qat-cy.yaml",
    ],
    "SGX EPC is a memory size, not a device count": [
        _INTEL_DP + "deployments__sgx_aesmd__base__intel-sgx-aesmd.yaml",
        _INTEL_DP + "deployments__sgx_enclave_apps__base__intelsgx-job.yaml",
    ],
    "already DRA (KEP-5004): implicit deviceclass.resource.kubernetes.io/ name": [
        "intel__intel-resource-drivers-for-kubernetes__deployments__gaudi__examples__"
        "deployment-extended-resources-implicit.yaml",
    ],
    "intel.com/gpu is served through a DeviceClass extendedResourceName (KEP-5004); no built-in mapping": [
        "intel__intel-resource-drivers-for-kubernetes__deployments__gpu__examples__deployment-extended-resources.yaml",
    ],
    "a zero count of an unmapped name": [
        "smarter-project__smarter-device-manager__client-nvidia.yaml.template.yaml",
    ],
}
LEFT_AS_IS: dict[str, str] = {name: reason for reason, names in _LEFT_AS_IS_GROUPS.items() for name in names}

# GPU workloads that should change but do not: open design questions (none at present).
NOT_CONVERTED_DESIGN: dict[str, str] = {}


def legacy_id(path: Path) -> str:
    return path.name


def convert_file(path: Path, config: Config = CONFIG) -> list[tuple[Any, ConversionResult]]:
    return [(doc, convert(doc, config)) for doc in load_documents(path) if isinstance(doc, dict)]


def test_corpus_is_present() -> None:
    assert len(LEGACY) == 75
    for name in (*LEFT_AS_IS, *NOT_CONVERTED_DESIGN, *UPSTREAM_INVALID):
        assert (CORPUS / "legacy" / name).is_file(), name


@pytest.mark.parametrize("path", LEGACY, ids=legacy_id)
def test_legacy_converts_without_errors(path: Path) -> None:
    found = {(f.rule, f.path) for _, result in convert_file(path) for f in errors(result)}
    assert found == EXPECTED_LEGACY_ERRORS.get(path.name, set())


@pytest.mark.parametrize("path", LEGACY, ids=legacy_id)
def test_legacy_output_validates_for_134(path: Path) -> None:
    for doc, result in convert_file(path):
        if not result.changed:
            continue
        obj = copy.deepcopy(converted(result))
        assert obj is not None
        if path.name in UPSTREAM_INVALID:
            field, _reason = UPSTREAM_INVALID[path.name]
            assert any(field[-1] in e for e in schema_errors(doc)), "the upstream file is no longer invalid"
            parent = obj
            for part in field[:-1]:
                parent = parent[part]
            del parent[field[-1]]
        if validate_object(obj, T134).checked:
            assert schema_errors(obj) == (), doc.get("kind")
        else:  # a CRD: each converted pod spec must be a valid pod spec
            specs = list(CONFIG.workloads.pod_specs(obj))
            assert specs, doc.get("kind")
            for where, spec in specs:
                assert schema_errors(as_pod(spec, CONFIG.workloads.container_fields(doc))) == (), where
        for template in result.templates:
            assert schema_errors(template) == ()


@pytest.mark.parametrize("path", LEGACY, ids=legacy_id)
def test_legacy_conversion_is_idempotent(path: Path) -> None:
    for _doc, result in convert_file(path):
        if result.object is None:
            continue
        again = convert(copy.deepcopy(result.object), CONFIG)
        assert not again.changed and again.object == result.object and again.templates == []


def leftover_requests(obj: Any, config: Config = CONFIG) -> list[tuple[str, str]]:
    """(container path, resource) of convertible, non-zero device-plugin requests still in pod specs."""
    left = []
    for where, spec in config.workloads.pod_specs(obj):
        for kind, index, item in iter_containers(spec):
            if kind == "ephemeralContainers":
                continue
            resources = item.get("resources") or {}
            for section in ("limits", "requests"):
                for name, value in (resources.get(section) or {}).items():
                    if not is_extended_resource(name) or not isinstance(
                        config.mappings.resolve(name), DeviceRequestSpec
                    ):
                        continue
                    try:
                        if parse_count(value) == 0:
                            continue
                    except (ValueError, ArithmeticError):
                        pass
                    left.append((json_path(*where, kind, index, "resources", section), name))
    return left


def legacy_change_params() -> list[Any]:
    params = []
    for path in LEGACY:
        if path.name in NOT_CONVERTED_DESIGN:
            marks = pytest.mark.xfail(strict=True, reason=f"design: {NOT_CONVERTED_DESIGN[path.name]}")
            params.append(pytest.param(path, marks=marks, id=path.name))
        else:
            params.append(pytest.param(path, id=path.name))
    return params


@pytest.mark.parametrize("path", legacy_change_params())
def test_legacy_gpu_workloads_change(path: Path) -> None:
    results = convert_file(path)
    if path.name in LEFT_AS_IS:
        assert not any(r.changed for _, r in results), LEFT_AS_IS[path.name]
        # ... and the user is told: a warning (or the KEP-5004 info) for the kept requests.
        said = [
            f
            for _, r in results
            for f in r.findings
            if f.severity is not Severity.INFO or f.rule == "extended-resource-dra"
        ]
        assert said, LEFT_AS_IS[path.name]
        return
    assert any(r.changed for _, r in results), "a GPU workload in legacy/ did not change"
    for _doc, result in results:
        if not result.changed or result.object is None:
            continue
        reported = {f.path.split('["')[0] for f in result.problems}
        for where, name in leftover_requests(result.object):
            assert where in reported, f"{name} left at {where} without a finding"


def resolve_key(name: str) -> DeviceKey:
    spec = CONFIG.mappings.resolve(name)
    assert isinstance(spec, DeviceRequestSpec)
    return (spec.device_class_name, spec.selectors)


def _pod_keys(pod_spec: dict[str, Any], templates: list[dict[str, Any]]) -> Any:
    """resolve_key, with the selectors a pod's own annotations add (HAMi's selection, as CEL): the
    one template of that class the pod references."""
    referenced = {c.get("resourceClaimTemplateName") for c in pod_spec.get("resourceClaims") or []}
    keys: dict[str, set[DeviceKey]] = {}
    for template in templates:
        if template["metadata"]["name"] in referenced:
            for request in template["spec"]["spec"]["devices"]["requests"]:
                exactly = request.get("exactly") or request
                selectors = tuple(s["cel"]["expression"] for s in exactly.get("selectors") or ())
                keys.setdefault(exactly["deviceClassName"], set()).add((exactly["deviceClassName"], selectors))

    def key_for(name: str) -> DeviceKey:
        default = resolve_key(name)
        found = keys.get(default[0], set())
        return next(iter(found)) if len(found) == 1 else default

    return key_for


@pytest.mark.parametrize("path", LEGACY, ids=legacy_id)
def test_legacy_device_counts_are_kept(path: Path) -> None:
    """The invariant on real pods: every fully converted resource allocates exactly the device-plugin need."""
    for doc, result in convert_file(path):
        if not result.changed or result.object is None:
            continue
        before_specs = dict(CONFIG.workloads.pod_specs(copy.deepcopy(doc)))
        for where, after in CONFIG.workloads.pod_specs(copy.deepcopy(converted(result))):
            before = before_specs[where]
            names = {
                name
                for _, _, item in iter_containers(before)
                for section in ("limits", "requests")
                for name in ((item.get("resources") or {}).get(section) or {})
                if is_extended_resource(name) and isinstance(CONFIG.mappings.resolve(name), DeviceRequestSpec)
            }
            still = {name for _, name in leftover_requests({"apiVersion": "v1", "kind": "Pod", "spec": after})}
            check_invariant(before, after, result.templates, sorted(names - still), _pod_keys(after, result.templates))


# --- negative ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_files("negative"), ids=legacy_id)
def test_negative_nothing_is_rewritten(path: Path) -> None:
    for doc, result in convert_file(path):
        assert not result.changed, doc.get("kind")
        assert result.object is doc
        assert result.templates == []
        assert not errors(result)
        assert findings(result, "device-plugin-to-claim") == []


# --- dra-versions -----------------------------------------------------------------------------------------

DRA_ROOT = CORPUS / "dra-versions"

_CLASSIC = "classic DRA (vendor parametersRef / spec.controller): no automatic equivalent (docs/dra-api.md 2.7)"
_TEMPLATE_PARAMS = {("classic-dra", "spec.spec.parametersRef")}
_CLAIM_PARAMS = {("classic-dra", "spec.parametersRef")}
_QAT_FLAT = {("flat-request-in-v1", "spec.spec.devices.requests[0]")}
_NOT_SERVED = {("not-served", "apiVersion")}

# (file relative to dra-versions/, document index) -> expected ERROR findings for target 1.34, with the reason.
_BOTH_EXACTLY_AND_FIRST = {("exactly-or-first-available", "spec.spec.devices.requests[0]")}
EXPECTED_134: dict[tuple[str, int], tuple[set[tuple[str, str]], str]] = {
    ("NVIDIA__k8s-dra-driver-gpu/commit-6aeb272/demo/specs/quickstart/gpu-test-mps.yaml", 1): (_CLAIM_PARAMS, _CLASSIC),
    **{
        ("NVIDIA__k8s-dra-driver-gpu/commit-6aeb272/demo/specs/quickstart/gpu-test4.yaml", i): (
            _TEMPLATE_PARAMS,
            _CLASSIC,
        )
        for i in (2, 4, 6, 8)
    },
    **{
        ("NVIDIA__k8s-dra-driver-gpu/commit-6aeb272/demo/specs/quickstart/gpu-test5.yaml", i): (
            _TEMPLATE_PARAMS,
            _CLASSIC,
        )
        for i in (2, 4)
    },
    ("NVIDIA__k8s-dra-driver-gpu/commit-6aeb272/demo/specs/quickstart/gpu-test6.yaml", 2): (_TEMPLATE_PARAMS, _CLASSIC),
    ("NVIDIA__k8s-dra-driver-gpu/v25.12.0/demo/specs/selectors/claims.yaml", 0): (_TEMPLATE_PARAMS, _CLASSIC),
    ("NVIDIA__k8s-dra-driver-gpu/v25.12.0/demo/specs/selectors/claims.yaml", 1): (_TEMPLATE_PARAMS, _CLASSIC),
    ("intel__intel-resource-drivers-for-kubernetes/gpu-v0.5.0/deployments/gpu/structured/claim-external-gpu.yaml", 1): (
        _CLAIM_PARAMS,
        _CLASSIC,
    ),
    ("intel__intel-resource-drivers-for-kubernetes/gpu-v0.5.0/deployments/gpu/structured/pod-inline-gpu.yaml", 1): (
        _TEMPLATE_PARAMS,
        _CLASSIC,
    ),
    ("kubernetes-sigs__dra-example-driver/commit-b13a15f/demo/gpu-test4.yaml", 2): (_TEMPLATE_PARAMS, _CLASSIC),
    ("kubernetes-sigs__dra-example-driver/commit-cba2ec6/demo/gpu-test4.yaml", 2): (_TEMPLATE_PARAMS, _CLASSIC),
    ("kubernetes__api/v0.30.0/testdata/HEAD/resource.k8s.io.v1alpha2.ResourceClaimTemplate.yaml", 0): (
        _TEMPLATE_PARAMS,
        _CLASSIC,
    ),
    ("kubernetes__api/v0.30.0/testdata/HEAD/resource.k8s.io.v1alpha2.ResourceClaimTemplate.json", 0): (
        _TEMPLATE_PARAMS,
        _CLASSIC,
    ),
    ("kubernetes__api/v0.31.0/testdata/HEAD/resource.k8s.io.v1alpha3.ResourceClaimTemplate.yaml", 0): (
        {("classic-dra", "spec.spec.controller")},
        _CLASSIC,
    ),
    ("kubernetes__api/v0.31.0/testdata/HEAD/resource.k8s.io.v1alpha3.ResourceClaimTemplate.json", 0): (
        {("classic-dra", "spec.spec.controller")},
        _CLASSIC,
    ),
    # The fuzzer fills both the flat request fields and firstAvailable: invalid in any version (docs/dra-api.md 2.2).
    ("kubernetes__api/v0.36.0/testdata/HEAD/resource.k8s.io.v1beta1.ResourceClaimTemplate.yaml", 0): (
        {("exactly-and-first-available", "spec.spec.devices.requests[0]")},
        "request with both device fields and firstAvailable",
    ),
    ("kubernetes__api/v0.36.0/testdata/HEAD/resource.k8s.io.v1beta1.ResourceClaimTemplate.json", 0): (
        {("exactly-and-first-available", "spec.spec.devices.requests[0]")},
        "request with both device fields and firstAvailable",
    ),
    # The same fuzz fixtures in v1beta2/v1 set both exactly and firstAvailable: the apiserver rejects that.
    **{
        (f"kubernetes__api/v0.36.0/testdata/HEAD/resource.k8s.io.{version}.ResourceClaimTemplate.{ext}", 0): (
            _BOTH_EXACTLY_AND_FIRST,
            "request with both exactly and firstAvailable",
        )
        for version in ("v1beta2", "v1")
        for ext in ("yaml", "json")
    },
    # Upstream bug: resource.k8s.io/v1 templates written with v1beta1's flat request fields (invalid input).
    **{
        (
            "intel__intel-resource-drivers-for-kubernetes/gpu-v0.9.0/deployments/qat/examples/deployment-inline.yaml",
            i,
        ): (
            _QAT_FLAT,
            "upstream v1 object with flat (v1beta1) request fields",
        )
        for i in (0, 1, 2)
    },
    # DeviceTaintRule v1beta2 and v1 are written as v1alpha3, the version 1.34 serves (docs/dra-api.md 1.1),
    # except upstream's API testdata, whose placeholder values ("effectValue") no version accepts.
    **{
        (f"kubernetes__api/{release}/testdata/HEAD/resource.k8s.io.{version}.DeviceTaintRule.yaml", 0): (
            {("schema-input", "spec.taint.effect")},
            "upstream testdata: placeholder taint effect",
        )
        for release, version in (("HEAD-10b39a3", "v1"), ("v0.36.0", "v1beta2"))
    },
}

_NEWER_THAN_132 = "field added after 1.32 (field-not-in-target)"

# The v1 objects converted down to 1.32 (v1beta1): expected ERROR findings.
EXPECTED_132: dict[tuple[str, int], tuple[set[tuple[str, str]], str]] = {
    **{
        k: v
        for k, v in EXPECTED_134.items()
        if k[0].startswith("intel__intel-resource-drivers-for-kubernetes/gpu-v0.9.0/deployments/qat")
    },
    ("kubernetes__api/HEAD-10b39a3/testdata/HEAD/resource.k8s.io.v1.DeviceTaintRule.yaml", 0): (
        _NOT_SERVED,
        "v1 DeviceTaintRule unreleased",
    ),
    (
        "kubernetes-sigs__dra-example-driver/v0.4.0/demo/examples/device-taints-tolerations/device-taint-pod-toleration/2-basic-resourceclaimtemplate.yaml",
        2,
    ): (
        {("field-not-in-target", "spec.spec.devices.requests[0].exactly.tolerations")},
        _NEWER_THAN_132,
    ),
    **{
        (
            "kubernetes-sigs__dra-example-driver/v0.4.0/demo/examples/prioritized-alternatives/prioritized-alternatives.yaml",
            i,
        ): (
            {("field-not-in-target", "spec.spec.devices.requests[0].firstAvailable")},
            _NEWER_THAN_132,
        )
        for i in (1, 2)
    },
    **{
        (f"kubernetes__api/v0.36.0/testdata/HEAD/resource.k8s.io.v1.ResourceClaimTemplate.{ext}", 0): (
            _BOTH_EXACTLY_AND_FIRST,
            "request with both exactly and firstAvailable (checked before the target's fields)",
        )
        for ext in ("yaml", "json")
    },
}

# Kept as is (served), but carries a `status` of the 1.36 API, which 1.34's schema does not have.
STATUS_KEPT = (
    "kubernetes__api/v0.36.0/testdata/HEAD/resource.k8s.io.v1alpha3.DeviceTaintRule.yaml",
    0,
)


def dra_documents(predicate: Any) -> list[Any]:
    params = []
    for path in corpus_files("dra-versions"):
        rel = str(path.relative_to(DRA_ROOT))
        for index, doc in enumerate(load_documents(path)):
            if isinstance(doc, dict) and predicate(doc):
                marks = []
                if (rel, index) == STATUS_KEPT and predicate is is_dra:
                    marks.append(
                        pytest.mark.xfail(
                            strict=True,
                            reason="design: objects the engine does not rewrite keep `status` (docs/dra-api.md 2.7 "
                            "says drop it); this 1.36 fixture's status.conditions is not in the 1.34 schema",
                        )
                    )
                params.append(pytest.param(rel, index, doc, marks=marks, id=f"{rel}[{index}]"))
    return params


def uses_claim_source(obj: Any) -> bool:
    return any(
        isinstance(c, dict) and "source" in c
        for _, spec in CONFIG.workloads.pod_specs(obj)
        for c in spec.get("resourceClaims") or []
    )


def is_dra(doc: dict[str, Any]) -> bool:
    return str(doc.get("apiVersion", "")).startswith("resource.k8s.io/")


def is_v1(doc: dict[str, Any]) -> bool:
    return doc.get("apiVersion") == "resource.k8s.io/v1"


def is_workload(doc: dict[str, Any]) -> bool:
    return not is_dra(doc) and CONFIG.workloads.lookup(doc) is not None


def test_expected_errors_refer_to_real_documents() -> None:
    for rel, index in (*EXPECTED_134, *EXPECTED_132, STATUS_KEPT):
        docs = load_documents(DRA_ROOT / rel)
        assert is_dra(docs[index]), (rel, index)


def check_dra(rel: str, index: int, doc: dict[str, Any], config: Config, expected: dict[Any, Any]) -> None:
    frozen = copy.deepcopy(doc)
    result = convert(doc, config)
    if (rel, index) in expected:
        keys, _reason = expected[(rel, index)]
        assert error_keys(result) == keys
        assert not result.changed and result.object == frozen
        return
    assert not errors(result), [f.message for f in errors(result)]
    if result.object is None:
        assert result.dropped
        return
    assert (
        converted(result)["apiVersion"] == config.target.dra_api_version
        or converted(result)["kind"] == "DeviceTaintRule"
    )
    assert schema_errors(converted(result), config.target) == ()
    again = convert(copy.deepcopy(converted(result)), config)
    assert not again.changed and again.object == result.object and not errors(again)


@pytest.mark.parametrize(("rel", "index", "doc"), dra_documents(is_dra))
def test_dra_objects_convert_for_134(rel: str, index: int, doc: dict[str, Any]) -> None:
    check_dra(rel, index, doc, CONFIG, EXPECTED_134)


@pytest.mark.parametrize(("rel", "index", "doc"), dra_documents(is_v1))
def test_v1_dra_objects_convert_down_to_132(rel: str, index: int, doc: dict[str, Any]) -> None:
    config = default_config("1.32")
    check_dra(rel, index, doc, config, EXPECTED_132)
    result = convert(doc, config)
    if result.changed:
        assert result.object is not None and converted(result)["apiVersion"] == "resource.k8s.io/v1beta1"
        spec = converted(result)["spec"].get("spec", converted(result)["spec"])
        assert all("exactly" not in r for r in (spec.get("devices") or {}).get("requests") or [])


@pytest.mark.parametrize(("rel", "index", "doc"), dra_documents(is_workload))
def test_workloads_next_to_dra_objects_are_valid_for_134(rel: str, index: int, doc: dict[str, Any]) -> None:
    """Pods with legacy `resourceClaims[].source` become valid 1.34 pods; the others stay valid."""
    legacy = uses_claim_source(doc)
    result = convert(doc, CONFIG)
    assert not errors(result)
    assert result.object is not None
    assert not uses_claim_source(result.object)
    if legacy:
        assert result.changed and findings(result, "legacy-claim-source", Severity.INFO)
        assert schema_errors(doc, T134) != ()
    assert schema_errors(converted(result), T134) == ()


def test_upgrading_the_corpus_to_132_keeps_workloads_valid() -> None:
    config = default_config("1.32")
    checked = 0
    for path in corpus_files("dra-versions"):
        for doc in load_documents(path):
            if isinstance(doc, dict) and is_workload(doc):
                result = convert(doc, config)
                assert result.object is not None and not errors(result)
                assert schema_errors(converted(result), T132) == ()
                checked += 1
    assert checked > 50
