"""The GPU-to-DRA edit on real manifests: surgical, exact, and every untouched line kept.

Runs over every file of the shared legacy corpus when it is present, plus inline excerpts of
the shapes that matter most (so the suite means something without the corpus).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import corpus
import pytest
from yamltext_support import removed_line_ranges

from dra_migrate.manifests.yamltext import edit_document, kubeyaml, split_stream

CORPUS = corpus.CORPUS / "legacy"
_VENDOR = re.compile(r"^[a-z0-9.-]+\.(?:com|ai|io)/")


def gpu_to_dra(obj: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    """A stand-in for the translator: vendor resources out, claims in, nodeName to nodeSelector.

    Returns the new object and the paths of the keys it removed.
    """
    new = copy.deepcopy(obj)
    removed: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...], pod: dict[str, Any] | None) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, (*path, i), pod)
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("containers"), list):
            pod = node
        resources = node.get("resources")
        if isinstance(resources, dict) and _strip_vendor(resources, (*path, "resources"), removed):
            resources.setdefault("claims", []).append({"name": "gpu"})
            if pod is not None and "resourceClaims" not in pod:
                pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
        if isinstance(node.get("nodeName"), str):
            removed.append((*path, "nodeName"))
            node["nodeSelector"] = {"kubernetes.io/hostname": node.pop("nodeName")}
        for key, value in list(node.items()):
            walk(value, (*path, key), pod)

    walk(new, (), None)
    return new, removed


def _strip_vendor(resources: dict[str, Any], path: tuple[Any, ...], removed: list[tuple[Any, ...]]) -> bool:
    found = False
    for section in ("limits", "requests"):
        amounts = resources.get(section)
        if not isinstance(amounts, dict):
            continue
        for key in [k for k in amounts if _VENDOR.match(str(k))]:
            del amounts[key]
            removed.append((*path, section, key))
            found = True
        if not amounts:
            del resources[section]
            removed.append((*path, section))
    return found


def assert_untouched_lines_kept(original: str, result: str, removed: set[int]) -> None:
    kept = [line for i, line in enumerate(original.splitlines(keepends=True)) if i not in removed]
    got = iter(result.splitlines(keepends=True))
    for line in kept:
        # a last line without a break may gain one when new lines follow it
        assert any(other == line or other.rstrip("\r\n") == line for other in got), f"lost {line!r}"


def _json_equal(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def check_document(text: str, obj: Any) -> str:
    new, removed = gpu_to_dra(obj)
    result = edit_document(text, obj, new)
    assert result.method == "surgical", result.reason
    loaded = kubeyaml.load(result.text)
    assert loaded == new and _json_equal(loaded, new)
    if new == obj:
        assert result.text == text
    assert_untouched_lines_kept(text, result.text, removed_line_ranges(text, removed))
    assert result.text.endswith("\n") == text.endswith("\n")
    return result.text


_FILES = corpus.params(sorted(CORPUS.glob("*")) if CORPUS.is_dir() else [], "legacy")


@pytest.mark.parametrize("path", _FILES, ids=lambda p: p.name[:60])
def test_corpus_file(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    stream = split_stream(text)
    out = [check_document(doc.text, doc.obj) for doc in stream.documents]
    assert len(stream.join(out)) > 0


GPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: gpu-operator-test
spec:
  restartPolicy: OnFailure
  containers:
    - name: cuda-vector-add
      # https://catalog.ngc.nvidia.com/orgs/nvidia/teams/k8s/containers/cuda-sample
      image: "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
      resources:
        limits:
          nvidia.com/gpu: 1
"""
GPU_POD_DRA = """\
apiVersion: v1
kind: Pod
metadata:
  name: gpu-operator-test
spec:
  restartPolicy: OnFailure
  containers:
    - name: cuda-vector-add
      # https://catalog.ngc.nvidia.com/orgs/nvidia/teams/k8s/containers/cuda-sample
      image: "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
      resources:
        claims:
          - name: gpu
  resourceClaims:
    - name: gpu
      resourceClaimTemplateName: gpu-template
"""
ROCM_TAIL = """\
spec:
  containers:
  - name: rocm-test-container
    env:
    - name: HIP_VISIBLE_DEVICES
      value: "0" # # 0,1,2,...,n for running on GPU
    args:
      - |
        import tensorflow as tf

        print(tf.__version__)
    resources:
      requests:
        amd.com/gpu: 1
      limits:
        amd.com/gpu: 1 # requesting a GPU"""
ROCM_TAIL_DRA = """\
spec:
  containers:
  - name: rocm-test-container
    env:
    - name: HIP_VISIBLE_DEVICES
      value: "0" # # 0,1,2,...,n for running on GPU
    args:
      - |
        import tensorflow as tf

        print(tf.__version__)
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template"""
HAMI = """\
spec:
  containers:
    - name: ubuntu-container
      resources:
        limits:
          nvidia.com/gpu: 2 # declare how many physical GPUs the pod needs
          cpu: 1 # not a GPU \uff08Optional,Integer\uff09
          nvidia.com/gpumem: 3000 # identifies 3000M GPU memory \uff08Optional,Integer\uff09
    - name: sidecar
      image: busybox
"""
HAMI_DRA = """\
spec:
  containers:
    - name: ubuntu-container
      resources:
        limits:
          cpu: 1 # not a GPU \uff08Optional,Integer\uff09
        claims:
          - name: gpu
    - name: sidecar
      image: busybox
  resourceClaims:
    - name: gpu
      resourceClaimTemplateName: gpu-template
"""
BLOOM = """\
spec:
  predictor:
    pytorch:
      storageUri: pvc://model-cache
      resources:
          limits:
            cpu: 4
            nvidia.com/gpu: 1
  nodeName: ip-xxx.us-west-2.compute.internal
"""
BLOOM_DRA = """\
spec:
  predictor:
    pytorch:
      storageUri: pvc://model-cache
      resources:
          limits:
            cpu: 4
          claims:
          - name: gpu
  nodeSelector:
    kubernetes.io/hostname: ip-xxx.us-west-2.compute.internal
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [(GPU_POD, GPU_POD_DRA), (ROCM_TAIL, ROCM_TAIL_DRA), (HAMI, HAMI_DRA), (BLOOM, BLOOM_DRA)],
    ids=["gpu-operator-comment-in-container", "rocm-trailing-comment-no-eol", "hami-comments", "kserve-bloom"],
)
def test_excerpt(text: str, expected: str) -> None:
    assert check_document(text, kubeyaml.load(text)) == expected


def test_multi_document_stream_only_changes_gpu_documents() -> None:
    text = "# svc\napiVersion: v1\nkind: Service\n---\n" + GPU_POD + "--- # cm\nkind: ConfigMap\n"
    stream = split_stream(text)
    out = []
    for doc in stream.documents:
        new, _ = gpu_to_dra(doc.obj)
        out.append(doc.text if new == doc.obj else edit_document(doc.text, doc.obj, new).text)
    head, tail = "# svc\napiVersion: v1\nkind: Service\n---\n", "--- # cm\nkind: ConfigMap\n"
    assert stream.join(out) == head + GPU_POD_DRA + tail
