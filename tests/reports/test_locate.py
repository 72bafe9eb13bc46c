"""The line a finding's path names in its document, and the document's own first line, as reports print them."""

from __future__ import annotations

from pathlib import Path

from dra_migrate.engine import default_config, json_path
from dra_migrate.translator.conversion.pipeline import DocumentReport, RunOptions, process_json, process_yaml
from dra_migrate.translator.conversion.registry import TemplateRegistry
from dra_migrate.translator.reading.sources import Source
from dra_migrate.translator.results.locate import document_line, field_lines, path_steps

OPTIONS = RunOptions(config=default_config(), input_classes={})


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """The 1-based line holding the `occurrence`-th `needle` of `text`."""
    position = -1
    for _ in range(occurrence):
        position = text.index(needle, position + 1)
    return text.count("\n", 0, position) + 1


def test_path_steps_read_what_json_path_writes() -> None:
    parts: tuple[str | int, ...] = ("spec", "containers", 0, "resources", "limits", "nvidia.com/gpu", "x-1", 12)
    assert path_steps(json_path(*parts)) == parts
    assert path_steps("items[2]." + json_path("nvidia.com/gpu")) == ("items", 2, "nvidia.com/gpu")


STREAM = """# a leading comment
%YAML 1.1
---
# the Deployment
base: &base
  resources:
    limits:
      nvidia.com/gpu: 1
---
apiVersion: v1
kind: Pod
metadata: {name: flow, labels: {a: b}}
spec:
  containers:
  - name: one
    resources: {limits: {"nvidia.com/gpu": 2}}
  -
    name: two
    <<: {image: x}
...
---
apiVersion: v1
kind: List
items:
  - kind: Pod
    spec:
      "quoted key":
        - a
        - b
"""


def documents(text: str) -> list[DocumentReport]:
    """The documents of a stream as the pipeline reports them (spans and first lines), through its real split."""
    from dra_migrate.manifests.yamltext.split import scan_document_starts

    starts = scan_document_starts(text)
    assert starts is not None
    reports = []
    for index, (start, end) in enumerate(zip(starts, [*starts[1:], len(text)], strict=True)):
        reports.append(DocumentReport(index, start, end, text.count("\n", 0, start) + 1))
    return reports


def test_document_lines_skip_comments_directives_and_markers() -> None:
    first, second, third = documents(STREAM)
    assert document_line(STREAM, first) == line_of(STREAM, "base:")
    assert document_line(STREAM, second) == line_of(STREAM, "apiVersion: v1")
    assert document_line(STREAM, third) == line_of(STREAM, "apiVersion: v1", 2)


def test_field_lines_follow_block_and_flow_style_and_stop_at_the_deepest_part_found() -> None:
    _, second, third = documents(STREAM)
    paths = {
        json_path("metadata", "labels", "a"): line_of(STREAM, "metadata: {name: flow"),
        json_path("spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"): line_of(STREAM, "resources: {"),
        json_path("spec", "containers", 1): line_of(STREAM, "name: two"),  # the item starts where its content does
        json_path("spec", "containers", 1, "tolerations"): line_of(STREAM, "name: two"),
        json_path("spec", "containers", 5, "name"): line_of(STREAM, "containers:"),
        json_path("spec", "nodeName"): line_of(STREAM, "spec:"),
    }
    assert field_lines(STREAM, second, paths) == paths
    quoted = json_path("items", 0, "spec", "quoted key", 1)
    assert field_lines(STREAM, third, [quoted]) == {quoted: line_of(STREAM, "- b")}
    assert field_lines(STREAM, third, ["", "nothing.here"]) == {}  # no part of it: the caller uses the document's line


def test_a_merged_key_points_into_the_mapping_it_comes_from() -> None:
    text = "base: &base\n  limits:\n    gpu: 1\nspec:\n  <<: *base\n  name: x\n"
    (document,) = documents(text)
    wanted = {"spec.limits.gpu": line_of(text, "gpu: 1"), "spec.name": line_of(text, "name: x")}
    assert field_lines(text, document, wanted) == wanted


def test_the_pipeline_gives_each_document_its_span_and_first_line() -> None:
    text = "# header\n---\napiVersion: v1\nkind: Pod\n---\n\n\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n"
    result = process_yaml(Source(Path("x.yaml"), Path("x.yaml")), text, OPTIONS)
    first, second = result.documents
    assert (first.first_line, second.first_line) == (1, line_of(text, "---", 2))
    assert [document_line(text, d) for d in result.documents] == [
        line_of(text, "apiVersion"),
        line_of(text, "apiVersion", 2),
    ]
    assert text[second.start : second.end].startswith("---\n\n\napiVersion")


def test_a_json_file_is_one_document_located_like_yaml() -> None:
    text = '{\n  "apiVersion": "v1",\n  "kind": "Pod",\n  "spec": {\n    "nodeName": "gpu-1"\n  }\n}\n'
    result = process_json(Source(Path("x.json"), Path("x.json")), text, TemplateRegistry(), OPTIONS)
    (document,) = result.documents
    assert document_line(text, document) == 1
    assert field_lines(text, document, ["spec.nodeName"]) == {"spec.nodeName": line_of(text, '"nodeName"')}
