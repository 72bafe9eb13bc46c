"""Kubeflow Trainer: a TrainJob that sets the node container's resources, over a runtime converted to claims.

Trainer builds each node pod from the TrainJob's runtime and, where the TrainJob sets
`spec.trainer.resourcesPerNode`, replaces the node container's resources with the runtime's limits and
requests merged with it: the apply configuration it writes holds limits and requests only
(kubeflow/trainer pkg/runtime/core/trainingruntime.go), so the claims a converted runtime gives the
node container are dropped, its pods declare claims no container uses (still allocated), and the
TrainJob's device-plugin GPUs stay. A TrainJob cannot ask for claims there either (they are dropped
the same way), so the pair has no exact DRA form: such a runtime is left as it was, with an error
naming the TrainJobs that use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from dra_migrate.engine import Finding, Severity

if TYPE_CHECKING:
    from dra_migrate.translator.conversion.pipeline import FileResult

GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
DEFAULT_RUNTIME_KIND = "ClusterTrainingRuntime"  # the API's default for spec.runtimeRef.kind
MARKER = "resourcesPerNode"


class Override(NamedTuple):
    kind: str  # of the runtime
    name: str
    namespace: str  # the TrainJob's ("" when it names none); a ClusterTrainingRuntime has none
    trainjob: str  # the TrainJob, as a message names it


def _mapping(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _group(obj: dict[str, Any]) -> str:
    return str(obj.get("apiVersion") or "").rpartition("/")[0]


def override_of(obj: Any) -> Override | None:
    """The runtime whose node container a TrainJob's resourcesPerNode replaces, if it sets any."""
    if not isinstance(obj, dict) or obj.get("kind") != "TrainJob" or _group(obj) != GROUP:
        return None
    spec = _mapping(obj, "spec")
    resources = _mapping(_mapping(spec, "trainer"), MARKER)
    if not any(resources.get(section) for section in ("limits", "requests", "claims")):
        return None
    reference = _mapping(spec, "runtimeRef")
    name, kind = reference.get("name"), reference.get("kind") or DEFAULT_RUNTIME_KIND
    if not isinstance(name, str) or kind not in RUNTIME_KINDS or (reference.get("apiGroup") or GROUP) != GROUP:
        return None
    metadata = _mapping(obj, "metadata")
    namespace = str(metadata.get("namespace") or "") if kind == "TrainingRuntime" else ""
    shown = f"TrainJob {namespace + '/' if namespace else ''}{metadata.get('name')}"
    return Override(str(kind), name, namespace, shown)


def overriding(
    api_version: str | None, kind: str | None, name: str | None, namespace: str | None, overrides: Iterable[Override]
) -> list[str]:
    """The TrainJobs (as named in messages) whose resourcesPerNode replaces this runtime's node container."""
    if kind not in RUNTIME_KINDS or str(api_version or "").rpartition("/")[0] != GROUP:
        return []
    return sorted(
        o.trainjob
        for o in overrides
        if (o.kind, o.name) == (kind, name) and (not o.namespace or not namespace or o.namespace == namespace)
    )


def refuse_overridden(result: FileResult, overrides: list[Override]) -> None:
    """An error on each converted runtime of the file that a TrainJob's resourcesPerNode overrides: the
    file is then left as it was (a file with an error is converted whole or not at all)."""
    for report in result.documents if overrides else ():
        if report.status != "changed":
            continue
        trainjobs = overriding(report.api_version, report.kind, report.name, report.namespace, overrides)
        if trainjobs:
            message = refusal(report.kind, report.name, trainjobs)
            report.findings.append(Finding(Severity.ERROR, "not-written", "", message))


def refusal(kind: str | None, name: str | None, trainjobs: list[str]) -> str:
    return (
        f"{kind} {name} is left on device plugins: {', '.join(trainjobs)} set "
        "spec.trainer.resourcesPerNode, and Trainer then rebuilds the node container's resources from limits and "
        "requests only (kubeflow/trainer pkg/runtime/core/trainingruntime.go), dropping the claims this conversion "
        "gives it: each node pod would get the device-plugin GPUs and an allocated claim no container uses. Move the "
        "device count into the runtime and drop it from resourcesPerNode, then convert again"
    )
