"""Helpers shared by the yamltext tests: where libyaml says removed keys and their values lie."""

from __future__ import annotations

from typing import Any

import yaml

from dra_migrate.manifests.yamltext import kubeyaml


def _last_line(node: yaml.Node) -> int:
    while isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style:
        node = node.value[-1][1] if isinstance(node, yaml.MappingNode) else node.value[-1]
    end = node.end_mark
    # a block scalar's end mark sits at the start of the line after it
    return int(end.line - 1 if isinstance(node, yaml.ScalarNode) and node.style in "|>" and node.style else end.line)


def removed_line_ranges(text: str, paths: list[tuple[Any, ...]]) -> set[int]:
    """Line numbers of each removed key and its whole value, from libyaml's own marks."""
    root = yaml.compose(text, Loader=kubeyaml.KubeLoader)
    assert root is not None
    lines: set[int] = set()
    for path in paths:
        node: yaml.Node = root
        key_node = None
        for part in path:
            if isinstance(node, yaml.SequenceNode):
                node = node.value[part]
            else:
                key_node, node = next((k, v) for k, v in node.value if k.value == part)
        assert key_node is not None
        lines.update(range(key_node.start_mark.line, _last_line(node) + 1))
    return lines
