"""The prefilter is sound: a document it lets through unparsed is one the full path leaves alone.

"Leaves alone" means everything a run shows: the same text, no finding, no error, a manifest
(not a skipped document). Documents are random manifests of every kind the engine routes
(workloads, DRA objects, Lists, inert kinds), with device requests, claims, nodeName, invalid
constructs, labels with `/` keys and risky scalars, written in random YAML styles (block, flow,
quoted, literal blocks, comments), then mutated as text (lines and characters inserted), so the
prefilter also meets broken YAML and shapes no dumper writes.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dra_migrate.engine import default_config, parse_config
from dra_migrate.translator.conversion.pipeline import FileResult, RunOptions, process
from dra_migrate.translator.conversion.registry import TemplateRegistry
from dra_migrate.translator.reading.prefilter import Prefilter
from dra_migrate.translator.reading.sources import Source

CONFIGS = {
    "default": default_config("1.34"),
    "nodename-all": parse_config(
        {
            "nodeName": {"scope": "all"},
            "mappings": [{"pattern": r"vendor\.com/accel-(?P<m>[a-z]+)", "deviceClassName": "accel.vendor.com"}],
            "workloads": [{"apiGroup": "example.com", "kind": "Trainer", "podSpecPaths": ["spec.pod"]}],
        },
        "1.33",
    ),
}

_KINDS = [
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("v1", "PodTemplate"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("ray.io/v1", "RayCluster"),
    ("serving.kserve.io/v1beta1", "InferenceService"),
    ("argoproj.io/v1alpha1", "Workflow"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
    ("example.com/v1", "Trainer"),
    ("v1", "List"),
    ("resource.k8s.io/v1beta1", "ResourceClaim"),
    ("resource.k8s.io/v1", "DeviceClass"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apps/v1", "Pod"),
    ("v1", "Deployment"),
]
_RESOURCE_NAMES = [
    "cpu",
    "memory",
    "hugepages-2Mi",
    "nvidia.com/gpu",
    "nvidia.com/mig-1g.5gb",
    "nvidia.com/gpumem",
    "amd.com/gpu",
    "example.org/widget",
    "vendor.com/accel-x",
    "kubernetes.io/thing",
    "deviceclass.resource.kubernetes.io/gpu",
    "requests.nvidia.com/gpu",
    "NVIDIA.com/gpu",
]
_LABEL_KEYS = ["app", "helm.sh/chart", "app.kubernetes.io/name", "checksum/config", "nvidia.com/gpu"]
_RISKY_TEXT = [
    "a\\b",
    "x & y",
    "*.example.com",
    "!important",
    "=",
    "2024-13-45",
    "2024-01-01",
    "0b_",
    "<<",
    "it's",
    '"q"',
    "#c",
    "a: b",
    "- x",
    "{a: 1}",
    "[1, 2]",
    "line\nnvidia.com/gpu: 1",
    "resourceClaims",
    "limits:\n  nvidia.com/gpu: 1",
    "/bin/sh -c",
    "yes",
    "~",
    "",
]

_scalars = st.one_of(
    st.sampled_from(_RISKY_TEXT),
    st.integers(-3, 40),
    st.sampled_from(["1", "2", "500m", "1.5", "-1", "1Gi", None, True]),
    st.text("ab/.:-# '\"\\\n{}[]&*!", max_size=8),
)


@st.composite
def _container(draw: st.DrawFn) -> dict[str, Any]:
    container: dict[str, Any] = {"name": draw(st.sampled_from(["main", "sidecar", "x"])), "image": "repo/img:1"}
    resources: dict[str, Any] = {}
    for section in draw(st.lists(st.sampled_from(["limits", "requests"]), max_size=2, unique=True)):
        resources[section] = draw(st.dictionaries(st.sampled_from(_RESOURCE_NAMES), _scalars, max_size=3))
    if draw(st.integers(0, 9)) == 0:
        resources["claims"] = [{"name": "gpu"}]
    empty_resources: bool = draw(st.booleans())
    if resources or empty_resources:
        container["resources"] = resources
    if draw(st.integers(0, 5)) == 0:
        container["env"] = [{"name": "N", "valueFrom": {"resourceFieldRef": {"resource": "claims.gpu"}}}]
    if draw(st.booleans()):
        container["volumeMounts"] = [{"name": "data", "mountPath": draw(st.sampled_from(["/data", "/a b/c"]))}]
    if draw(st.booleans()):
        container["args"] = draw(st.lists(_scalars, max_size=3))
    return container


@st.composite
def _pod_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(st.lists(_container(), min_size=1, max_size=2))}
    if draw(st.integers(0, 4)) == 0:
        spec["initContainers"] = draw(st.lists(_container(), max_size=1))
    extra = draw(st.integers(0, 12))
    if extra == 0:
        spec["nodeName"] = "node-1"
    elif extra == 1:
        spec["resourceClaims"] = [{"name": "gpu", "source": {"resourceClaimName": "c"}}]
    elif extra == 2:
        spec["resourceClaimTemplates"] = [{"name": "t"}]
    if draw(st.booleans()):
        spec["nodeSelector"] = {draw(st.sampled_from(["kubernetes.io/os", "example.com/pool"])): "x"}
    return spec


def _wrap(api_version: str, kind: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": pod_spec}
    bodies: dict[str, dict[str, Any]] = {
        "Pod": {"spec": pod_spec},
        "PodTemplate": {"template": template},
        "CronJob": {"spec": {"jobTemplate": {"spec": {"template": template}}}},
        "PyTorchJob": {"spec": {"pytorchReplicaSpecs": {"Worker": {"template": template}}}},
        "RayCluster": {"spec": {"headGroupSpec": {"template": template}}},
        "InferenceService": {"spec": {"predictor": {**pod_spec, "pytorch": pod_spec["containers"][0]}}},
        "Workflow": {"spec": {"templates": [{"container": pod_spec["containers"][0]}]}},
        "TrainJob": {"spec": {"trainer": {"resourcesPerNode": pod_spec["containers"][0].get("resources", {})}}},
        "Trainer": {"spec": {"pod": pod_spec}},
        "ResourceClaim": {"spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu.example.com"}]}}},
        "DeviceClass": {"spec": {"extendedResourceName": "nvidia.com/gpu"}},
    }
    return {"apiVersion": api_version, "kind": kind, **bodies.get(kind, {"spec": {"template": template}})}


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(_KINDS))
    obj = _wrap(api_version, kind, draw(_pod_spec()))
    labels = draw(st.dictionaries(st.sampled_from(_LABEL_KEYS), _scalars, max_size=3))
    obj = {
        "apiVersion": obj.pop("apiVersion"),
        "kind": obj.pop("kind"),
        "metadata": {"name": "n", "labels": labels},
        **obj,
    }
    if kind == "List":
        obj["items"] = [_wrap("apps/v1", "Deployment", draw(_pod_spec()))]
    if draw(st.integers(0, 3)) == 0:
        obj["data"] = draw(st.dictionaries(st.sampled_from(["script", "k"]), _scalars, max_size=2))
    return obj


def _literal_strings(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (`key: |`), as charts write scripts and configs."""


_LiteralDumper.add_representer(str, _literal_strings)


def _dump(obj: dict[str, Any], style: int) -> str:
    dumper: type[yaml.SafeDumper] = _LiteralDumper if style % 2 else yaml.SafeDumper
    flow = {0: False, 1: False, 2: None, 3: False, 4: True}[style % 5]
    return str(
        yaml.dump(
            obj, Dumper=dumper, sort_keys=False, default_flow_style=flow, width=40 + 30 * style, indent=2 + style % 3
        )
    )


_INSERTS = [
    "  nvidia.com/gpu: 1\n",
    "        nvidia.com/gpu: 1\n",
    "limits: {nvidia.com/gpu: 1}\n",
    "    # comment with / and : and ' \"\n",
    'x: "open\n',
    "x: [a,\n",
    "  - |\n",
    "  k: |\n",
    "kind: Pod\n",
    "apiVersion: resource.k8s.io/v1\n",
    "  nodeName: n\n",
    "...\n",
    "---\n",
    "\t\n",
    "y: &a {nvidia.com/gpu: 1}\n",
    "z: *a\n",
    "  ? a\n",
]


@st.composite
def document_texts(draw: st.DrawFn) -> str:
    text = _dump(draw(manifests()), draw(st.integers(0, 9)))
    if draw(st.booleans()):
        text = "---\n# Source: chart/templates/x.yaml\n" + text
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.sampled_from(_INSERTS)))
    text = "".join(lines)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list(" \n:-'\"#{}[]/&*!|>"))) + text[at:]
    return text


def _full_path(text: str, config_name: str) -> FileResult:
    options = RunOptions(config=CONFIGS[config_name], input_classes={}, prefilter=False)
    return process(Source(Path("doc.yaml"), Path("doc.yaml")), text, TemplateRegistry(), options)


def _both_paths(text: str, config_name: str, validate: bool) -> tuple[FileResult, FileResult]:
    """(without the prefilter, with it)"""
    results = []
    for prefilter in (False, True):
        options = RunOptions(config=CONFIGS[config_name], input_classes={}, prefilter=prefilter, validate=validate)
        results.append(process(Source(Path("f.yaml"), Path("f.yaml")), text, TemplateRegistry(), options))
    return results[0], results[1]


def _assert_same(plain: FileResult, fast: FileResult, validate: bool) -> None:
    assert (fast.text, fast.error, fast.skipped) == (plain.text, plain.error, plain.skipped)
    # a document that passes is described from its object only when it is loaded to validate it
    names = [d.name for d in fast.documents] == [d.name for d in plain.documents]
    assert names or not validate
    assert [(d.status, d.kind, d.findings) for d in fast.documents] == [
        (d.status, d.kind, d.findings) for d in plain.documents
    ]
    assert [t["metadata"]["name"] for t in fast.templates] == [t["metadata"]["name"] for t in plain.templates]


def _left_alone(result: FileResult) -> bool:
    return (
        result.error is None
        and result.skipped is None
        and not result.changed
        and len(result.documents) == 1
        and result.documents[0].status == "unchanged"
        and not result.documents[0].findings
    )


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=document_texts())
def test_a_document_that_passes_is_left_alone_by_the_full_path(config_name: str, text: str) -> None:
    header = Prefilter(CONFIGS[config_name]).passes(text)
    event(f"passes: {header is not None}")
    if header is None:
        return
    result = _full_path(text, config_name)
    assert _left_alone(result), (result.error, result.skipped, [d.findings for d in result.documents])
    assert (result.documents[0].kind, result.documents[0].api_version) == (header.kind, header.api_version)


def test_ordinary_documents_pass_and_device_requests_do_not() -> None:
    prefilter = Prefilter(CONFIGS["default"])
    ordinary = (
        "# Source: web/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
        "  labels:\n    helm.sh/chart: web-1.0.0\n  annotations:\n    checksum/config: abc\nspec:\n  template:\n"
        '    spec:\n      containers:\n      - name: web\n        image: repo/web:1\n        args: ["--root=/srv"]\n'
        "        resources:\n          limits: {cpu: 500m, memory: 1Gi}\n        volumeMounts:\n"
        "        - mountPath: /data\n          name: data\n      nodeSelector:\n        kubernetes.io/os: linux\n"
    )
    assert prefilter.passes(ordinary) is not None
    script = 'apiVersion: v1\nkind: ConfigMap\ndata:\n  run.sh: |\n    #!/bin/sh\n    [ -n "$A" ] && echo \\x *\n'
    assert prefilter.passes(script) is not None
    for needle in ("nvidia.com/gpu: 1", "example.org/widget: 1", "claims.gpu: 1"):
        assert prefilter.passes(ordinary.replace("cpu: 500m", needle)) is None
    assert prefilter.passes(ordinary.replace("apps/v1", "resource.k8s.io/v1beta1")) is None
    assert prefilter.passes(ordinary.replace("nodeSelector", "resourceClaims")) is None
    assert prefilter.passes(script.replace("#!/bin/sh", "x: 2024-13-45").replace("run.sh: |", "d:")) is None


def test_nodename_needs_the_full_path_only_when_every_pod_gets_node_selection() -> None:
    pod = "apiVersion: v1\nkind: Pod\nspec:\n  nodeName: n1\n  containers:\n  - name: a\n"
    assert Prefilter(CONFIGS["default"]).passes(pod) is not None
    assert Prefilter(CONFIGS["nodename-all"]).passes(pod) is None
    assert _full_path(pod, "nodename-all").changed


@pytest.mark.parametrize("validate", [False, True])
def test_whole_files_come_out_the_same_with_and_without_the_prefilter(corpus: Path, validate: bool) -> None:
    """Every corpus file, and shuffled multi-document streams of them, through both paths; with
    --validate, the documents that pass are validated on their own (quickly loaded) objects."""
    paths = sorted(p for p in corpus.rglob("*") if p.suffix in (".yaml", ".yml"))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    rng = random.Random(12)
    texts += ["---\n".join(rng.sample(texts, 4)) for _ in range(20)]
    for text in texts:
        _assert_same(*_both_paths(text, "default", validate), validate)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        st.one_of(document_texts(), st.builds(_dump, manifests(), st.integers(0, 9))), min_size=1, max_size=3
    )
)
def test_validate_finds_the_same_with_and_without_the_prefilter(texts: list[str]) -> None:
    """--validate loads a passing document only to check it, without the prefilter's parse: one that
    does not load takes the whole-stream way, and every finding and error is the full path's."""
    stream = "".join(
        t if t.startswith("---") else "---\n" + t for t in (t if t.endswith("\n") else t + "\n" for t in texts)
    )
    plain, fast = _both_paths(stream, "default", True)
    event(f"a document passes: {any(Prefilter(CONFIGS['default']).passes(t) for t in texts)}")
    event(f"schema findings: {any(f.rule.startswith('schema') for d in plain.documents for f in d.findings)}")
    event(f"error: {plain.error is not None}")
    _assert_same(plain, fast, validate=True)
