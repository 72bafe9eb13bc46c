"""Exact-output cases for the surgical YAML editor and its fallbacks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra_migrate.manifests.yamltext import EditResult, edit_document, kubeyaml


def _edit(text: str, change: Any) -> tuple[EditResult, Any]:
    old = kubeyaml.load(text)
    new = copy.deepcopy(old)
    change(new)
    result = edit_document(text, old, new)
    assert kubeyaml.load(result.text) == new
    return result, new


def _gpu_to_claim(doc: dict[str, Any]) -> None:
    container = doc["spec"]["containers"][0]
    resources = container["resources"]
    for section in ("limits", "requests"):
        if section in resources:
            resources[section].pop("nvidia.com/gpu", None)
            if not resources[section]:
                del resources[section]
    resources["claims"] = [{"name": "gpu"}]
    doc["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]


def test_whole_limits_map_removed_and_claims_added_mirroring_indented_sequences() -> None:
    text = """\
apiVersion: v1
kind: Pod
spec:
  containers:
    - name: cuda
      # the image is pinned
      image: "nvcr.io/nvidia/k8s/cuda-sample:vectoradd"
      resources:
        limits:
          nvidia.com/gpu: 1  # one GPU
      # trailing note about the container
  restartPolicy: Never # never
"""
    result, _ = _edit(text, _gpu_to_claim)
    assert result.method == "surgical"
    assert (
        result.text
        == """\
apiVersion: v1
kind: Pod
spec:
  containers:
    - name: cuda
      # the image is pinned
      image: "nvcr.io/nvidia/k8s/cuda-sample:vectoradd"
      resources:
        claims:
          - name: gpu
      # trailing note about the container
  restartPolicy: Never # never
  resourceClaims:
    - name: gpu
      resourceClaimTemplateName: gpu
"""
    )


def test_one_key_of_several_removed_keeps_neighbours_and_comments() -> None:
    text = """\
spec:
  containers:
  - name: a
    resources:
      limits:
        cpu: 4 # cores
        # GPU count below
        nvidia.com/gpu: 2 # two
        # memory next
        memory: 16Gi
      requests:
        nvidia.com/gpu: 2
"""
    result, _ = _edit(text, _gpu_to_claim)
    assert result.method == "surgical"
    assert (
        result.text
        == """\
spec:
  containers:
  - name: a
    resources:
      limits:
        cpu: 4 # cores
        # GPU count below
        # memory next
        memory: 16Gi
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu
"""
    )


def test_flow_style_resources_are_re_rendered_as_flow() -> None:
    text = """\
spec:
  containers:
  - name: a  # main
    resources: {limits: {nvidia.com/gpu: 1}}   # flow
  nodeName: n1
"""
    result, _ = _edit(text, _gpu_to_claim)
    assert result.method == "surgical"
    assert (
        result.text
        == """\
spec:
  containers:
  - name: a  # main
    resources: {claims: [{name: gpu}]}   # flow
  nodeName: n1
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu
"""
    )


def test_json_like_flow_stays_json_like() -> None:
    text = 'spec: {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}\n'

    def change(doc: dict[str, Any]) -> None:
        doc["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}

    result, _ = _edit(text, change)
    assert result.method == "surgical"
    assert result.text == 'spec: {"containers": [{"name": "a", "resources": {"claims": [{"name": "gpu"}]}}]}\n'


def test_crlf_line_endings_are_kept_for_new_lines() -> None:
    text = "spec:\r\n  containers:\r\n  - name: a\r\n    resources:\r\n      limits:\r\n        nvidia.com/gpu: 1\r\n"
    result, _ = _edit(text, _gpu_to_claim)
    assert result.method == "surgical"
    assert result.text == (
        "spec:\r\n  containers:\r\n  - name: a\r\n    resources:\r\n      claims:\r\n      - name: gpu\r\n"
        "  resourceClaims:\r\n  - name: gpu\r\n    resourceClaimTemplateName: gpu\r\n"
    )


def test_missing_final_newline_stays_missing_when_lines_are_removed() -> None:
    text = "a: 1\nb: 2 # two"
    result, _ = _edit(text, lambda d: d.pop("b"))
    assert (result.method, result.text) == ("surgical", "a: 1")


def test_missing_final_newline_stays_missing_when_content_is_appended_at_the_end() -> None:
    # the appended lines take over the end of the file, still without a final newline
    text = "spec:\n  x: 1 # c"
    result, _ = _edit(text, lambda d: d["spec"].update(z=[1, 2]))
    assert (result.method, result.text) == ("surgical", "spec:\n  x: 1 # c\n  z:\n  - 1\n  - 2")


def test_missing_final_newline_with_removal_and_append_at_the_end() -> None:
    text = "spec:\n  containers:\n  - name: a\n    resources:\n      limits:\n        nvidia.com/gpu: 1"
    result, _ = _edit(text, _gpu_to_claim)
    assert (result.method, result.text) == (
        "surgical",
        "spec:\n  containers:\n  - name: a\n    resources:\n      claims:\n      - name: gpu\n"
        "  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: gpu",
    )


def test_comments_after_the_last_entry_belong_to_the_next_key_when_not_deeper() -> None:
    text = """\
spec:
  containers:
  - name: a
    image: b
    # deeper: stays inside the container, before new keys
  # sibling-level: about volumes
  volumes: []
"""

    def change(doc: dict[str, Any]) -> None:
        doc["spec"]["containers"][0]["env"] = [{"name": "X", "value": "1"}]
        doc["spec"]["containers"].append({"name": "b"})

    result, _ = _edit(text, change)
    assert result.method == "surgical"
    assert (
        result.text
        == """\
spec:
  containers:
  - name: a
    image: b
    # deeper: stays inside the container, before new keys
    env:
    - name: X
      value: '1'
  - name: b
  # sibling-level: about volumes
  volumes: []
""".replace("'1'", '"1"')
    )


def test_first_key_of_a_sequence_item_removed() -> None:
    text = "items:\n- nodeName: n1\n  image: b\n- nodeName: n2\n"

    def change(doc: dict[str, Any]) -> None:
        del doc["items"][0]["nodeName"]

    result, _ = _edit(text, change)
    assert (result.method, result.text) == ("surgical", "items:\n- image: b\n- nodeName: n2\n")


def test_sequence_items_removed_by_line() -> None:
    text = """\
tolerations:
- key: nvidia.com/gpu  # GPU nodes
  operator: Exists
# keep this
- key: other
  effect: NoSchedule
"""
    result, _ = _edit(text, lambda d: d["tolerations"].pop(0))
    assert (result.method, result.text) == (
        "surgical",
        "tolerations:\n# keep this\n- key: other\n  effect: NoSchedule\n",
    )


@pytest.mark.parametrize(
    ("line", "value", "expected"),
    [
        ('name: "old"  # c', "new", 'name: "new"  # c'),
        ("name: 'old'", "it's", "name: 'it''s'"),
        ("name: 'old'", "two\nlines", 'name: "two\\nlines"'),
        ("name: old", "new", "name: new"),
        ("name: old", "true", 'name: "true"'),
        ("name: old", "a: b", 'name: "a: b"'),
        ("name: old", 5, "name: 5"),
        ("name:", "x", "name: x"),
        ("name:   # empty", "x", "name: x   # empty"),
    ],
)
def test_scalar_replacement_keeps_quote_style(line: str, value: Any, expected: str) -> None:
    result, _ = _edit(f"a: 1\n{line}\nz: 2\n", lambda d: d.update(name=value))
    assert (result.method, result.text) == ("surgical", f"a: 1\n{expected}\nz: 2\n")


def test_literal_block_scalar_replaced_as_literal() -> None:
    text = "args:\n  - |\n    echo one\n    echo two\n  - next\n"
    result, _ = _edit(text, lambda d: d["args"].__setitem__(0, "echo three\necho four\n"))
    assert (result.method, result.text) == (
        "surgical",
        "args:\n  - |\n    echo three\n    echo four\n  - next\n",
    )


def test_block_value_replaced_by_other_shapes() -> None:
    text = "a:\n  b: 1\n  c: 2 # c\nd: [1, 2]\ne: x\n"

    def change(doc: dict[str, Any]) -> None:
        doc["a"] = [1, {"k": "v"}]
        doc["d"] = "flat"
        doc["e"] = {"m": 1}

    result, _ = _edit(text, change)
    assert (result.method, result.text) == (
        "surgical",
        "a:\n- 1\n- k: v # c\nd: flat\ne:\n  m: 1\n",
    )


def test_mapping_emptied_explicitly_becomes_flow_empty() -> None:
    text = "resources:\n  limits:\n    nvidia.com/gpu: 1\nname: x\n"
    result, _ = _edit(text, lambda d: d.update(resources={}))
    assert (result.method, result.text) == ("surgical", "resources: {}\nname: x\n")


def test_kserve_style_deep_indentation_is_mirrored() -> None:
    text = """\
spec:
  predictor:
    pytorch:
      resources:
          limits:
            cpu: 4
            nvidia.com/gpu: 1
  nodeName: host-1
"""

    def change(doc: dict[str, Any]) -> None:
        resources = doc["spec"]["predictor"]["pytorch"]["resources"]
        del resources["limits"]["nvidia.com/gpu"]
        resources["claims"] = [{"name": "gpu"}]
        doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": doc["spec"].pop("nodeName")}

    result, _ = _edit(text, change)
    assert result.method == "surgical"
    assert (
        result.text
        == """\
spec:
  predictor:
    pytorch:
      resources:
          limits:
            cpu: 4
          claims:
          - name: gpu
  nodeSelector:
    kubernetes.io/hostname: host-1
"""
    )


def test_document_header_and_footer_survive_edits() -> None:
    text = "# leading\n%YAML 1.1\n--- # header\na: 1 # one\n...\n# after the end\n"
    result, _ = _edit(text, lambda d: d.update(b=2))
    assert (result.method, result.text) == (
        "surgical",
        "# leading\n%YAML 1.1\n--- # header\na: 1 # one\nb: 2\n...\n# after the end\n",
    )


def test_bom_is_kept() -> None:
    text = "\ufeffa: 1\nb: 2\n"
    result, _ = _edit(text, lambda d: d.pop("a"))
    assert (result.method, result.text) == ("surgical", "\ufeffb: 2\n")


def test_new_keys_follow_new_order_and_need_quotes() -> None:
    text = "metadata:\n  name: x\n"

    def change(doc: dict[str, Any]) -> None:
        doc["metadata"]["labels"] = {"z": "yes", "a": "1.5", "b": "", "c": None, "d": 1.5}

    result, _ = _edit(text, change)
    assert result.text == (
        'metadata:\n  name: x\n  labels:\n    z: "yes"\n    a: "1.5"\n    b: ""\n    c: null\n    d: 1.5\n'
    )


@pytest.mark.parametrize(
    "text",
    [
        "base: &b\n  x: 1\nother: *b\n",
        "base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n",
        "v: !!str 1\nw: 2\n",
    ],
)
def test_anchors_merge_keys_and_tags_fall_back(text: str) -> None:
    def change(doc: dict[str, Any]) -> None:
        target = doc.get("other", doc)
        target["x"] = 9
        if "v" in doc:
            doc["v"] = "2"

    result, _ = _edit(text, change)
    assert result.method in ("roundtrip", "rewrite")
    assert result.reason


def test_roundtrip_fallback_keeps_comments_of_untouched_nodes() -> None:
    text = """\
--- # doc
top: &t {a: 1}
keep: 1 # keep me
# between
gone:
  x: 1 # x
  # after x
last: *t
"""

    def change(doc: dict[str, Any]) -> None:
        del doc["gone"]
        doc["top"]["a"] = 2  # the anchored node: its alias changes with it

    result, _ = _edit(text, change)
    assert result.method == "roundtrip"
    assert result.text.startswith("--- # doc\n")
    for comment in ("# keep me", "# between", "# after x"):
        assert comment in result.text


def test_rewrite_keeps_the_document_frame() -> None:
    from dra_migrate.manifests.yamltext.edit import rewrite

    assert rewrite("# c\n---\na: 1\n...\n", {"b": 2}) == "# c\n---\nb: 2\n...\n"
    assert rewrite("a: 1", {"b": 2}) == "b: 2"


def test_unchanged_document_is_returned_as_is() -> None:
    text = "a:   1   # odd spacing\n"
    result = edit_document(text, {"a": 1}, {"a": 1})
    assert result.text is text
