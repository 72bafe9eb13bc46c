"""`--validate`: what the apiserver would reject in an object, and whether the input already had it.

The OpenAPI schema (kubernetes-validate, strict) covers structure and types; resource.k8s.io
objects also get the checks the schema cannot express: DeviceClass names are DNS subdomains and
CEL selectors parse.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dra_migrate.engine import RESOURCE_GROUP, Target, cel_problem, dns_subdomain_problem, json_path
from dra_migrate.manifests.schema import validate_object


def _dra_values(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[str]:
    """Problems with deviceClassName values and CEL selector expressions anywhere in the object."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = (*path, str(key))
            if key == "deviceClassName" and isinstance(value, str) and value:
                problem = dns_subdomain_problem(value)
                if problem:
                    yield f"{json_path(*where)}: {problem}"
            elif key == "cel" and isinstance(value, dict) and isinstance(value.get("expression"), str):
                problem = cel_problem(value["expression"])
                if problem:
                    yield f"{json_path(*where, 'expression')}: {problem}"
            else:
                yield from _dra_values(value, where)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _dra_values(value, (*path, index))


def problems(obj: dict[str, Any], target: Target) -> list[str]:
    found = list(validate_object(obj, target).errors)
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and api_version.startswith(f"{RESOURCE_GROUP}/"):
        found.extend(_dra_values(obj.get("spec")))
    return found


def split_by_origin(output: dict[str, Any], original: Any, target: Target) -> tuple[list[str], list[str]]:
    """(problems the conversion introduced, problems the input already had) of one output object.

    The input is checked only when the output has problems, and only when it is the same kind of
    object: a generated template has no input, so all of its problems are the conversion's. An
    output that is its input (a document left as it was) had all of them already.
    """
    found = problems(output, target)
    if not found or not isinstance(original, dict) or original.get("kind") != output.get("kind"):
        return found, []
    before = set(found) if original is output else set(problems(original, target))
    return [p for p in found if p not in before], [p for p in found if p in before]
