"""Where pod specs live inside each workload kind, and how to find them.

Paths are dotted; a `*` segment (or `[*]`) stands for every item of a list or every value of a
map, so `spec.pytorchReplicaSpecs.*.template.spec` finds the Master and Worker pod specs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

PathPart = str | int


class WorkloadKind:
    __slots__ = ("api_group", "container_fields", "kind", "pod_spec_paths", "unsupported")

    def __init__(
        self,
        api_group: str,
        kind: str,
        pod_spec_paths: tuple[str, ...],
        unsupported: str | None = None,
        container_fields: tuple[str, ...] = (),
    ) -> None:
        self.api_group = api_group
        self.kind = kind
        self.pod_spec_paths = pod_spec_paths
        # Kinds whose containers cannot be given pod-level claims (no pod spec): scanned and reported.
        self.unsupported = unsupported
        # Keys of the pod spec that each hold one container (KServe model formats).
        self.container_fields = container_fields


def _apps(kind: str) -> WorkloadKind:
    return WorkloadKind("apps", kind, ("spec.template.spec",))


def _kubeflow(kind: str, replica_field: str) -> WorkloadKind:
    return WorkloadKind("kubeflow.org", kind, (f"spec.{replica_field}.*.template.spec",))


def _ray(kind: str, cluster_path: str) -> WorkloadKind:
    return WorkloadKind(
        "ray.io",
        kind,
        (f"{cluster_path}.headGroupSpec.template.spec", f"{cluster_path}.workerGroupSpecs[*].template.spec"),
    )


def _argo(kind: str, spec_path: str = "spec") -> WorkloadKind:
    """Argo Workflows 4.1 added `resourceClaims` to a template (its pod's claims; examples/resource-claims.yaml):
    each template is converted like a pod spec whose container is `container` or `script`."""
    return WorkloadKind("argoproj.io", kind, (f"{spec_path}.templates[*]",), container_fields=("container", "script"))


_TRAINJOB_REASON = (
    "TrainJob asks for devices in spec.trainer.resourcesPerNode, which Trainer merges into its runtime's node "
    "container as limits and requests only (claims there are dropped); move the count into the "
    "(Cluster)TrainingRuntime's node container, drop it here, and convert the runtime"
)
# InferenceService predictor/explainer fields that each hold one container (KServe v1beta1 API).
_KSERVE_MODEL_FORMATS = (
    "model",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "huggingface",
    "pmml",
    "lightgbm",
    "paddle",
    "alibi",
    "art",
)

BUILTIN_WORKLOADS: tuple[WorkloadKind, ...] = (
    WorkloadKind("", "Pod", ("spec",)),
    WorkloadKind("", "PodTemplate", ("template.spec",)),
    WorkloadKind("", "ReplicationController", ("spec.template.spec",)),
    _apps("Deployment"),
    _apps("ReplicaSet"),
    _apps("StatefulSet"),
    _apps("DaemonSet"),
    WorkloadKind("batch", "Job", ("spec.template.spec",)),
    WorkloadKind("batch", "CronJob", ("spec.jobTemplate.spec.template.spec",)),
    _kubeflow("PyTorchJob", "pytorchReplicaSpecs"),
    _kubeflow("TFJob", "tfReplicaSpecs"),
    _kubeflow("MPIJob", "mpiReplicaSpecs"),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs"),
    _kubeflow("PaddleJob", "paddleReplicaSpecs"),
    _kubeflow("JAXJob", "jaxReplicaSpecs"),
    _kubeflow("MXJob", "mxReplicaSpecs"),
    _ray("RayCluster", "spec"),
    WorkloadKind(
        "ray.io",
        "RayJob",
        (*_ray("RayJob", "spec.rayClusterSpec").pod_spec_paths, "spec.submitterPodTemplate.spec"),
    ),
    _ray("RayService", "spec.rayClusterConfig"),
    WorkloadKind("jobset.x-k8s.io", "JobSet", ("spec.replicatedJobs[*].template.spec.template.spec",)),
    WorkloadKind(
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
        ("spec.leaderWorkerTemplate.leaderTemplate.spec", "spec.leaderWorkerTemplate.workerTemplate.spec"),
    ),
    WorkloadKind("batch.volcano.sh", "Job", ("spec.tasks[*].template.spec",)),
    WorkloadKind(
        "trainer.kubeflow.org",
        "TrainingRuntime",
        ("spec.template.spec.replicatedJobs[*].template.spec.template.spec",),
    ),
    WorkloadKind(
        "trainer.kubeflow.org",
        "ClusterTrainingRuntime",
        ("spec.template.spec.replicatedJobs[*].template.spec.template.spec",),
    ),
    WorkloadKind(
        "serving.kserve.io",
        "InferenceService",
        ("spec.predictor", "spec.predictor.workerSpec", "spec.transformer", "spec.explainer"),
        container_fields=_KSERVE_MODEL_FORMATS,
    ),
    WorkloadKind(
        "serving.kserve.io",
        "LLMInferenceService",
        ("spec.template", "spec.worker", "spec.prefill.template", "spec.prefill.worker"),
    ),
    WorkloadKind(  # the base configuration LLMInferenceServices inherit: the same spec type
        "serving.kserve.io",
        "LLMInferenceServiceConfig",
        ("spec.template", "spec.worker", "spec.prefill.template", "spec.prefill.worker"),
    ),
    # Knative Serving refuses claims (engine/serverless.py): known, so never "unknown", and never rewritten.
    WorkloadKind("serving.knative.dev", "Service", ("spec.template.spec",)),
    WorkloadKind("serving.knative.dev", "Configuration", ("spec.template.spec",)),
    WorkloadKind("serving.knative.dev", "Revision", ("spec",)),
    WorkloadKind("trainer.kubeflow.org", "TrainJob", (), unsupported=_TRAINJOB_REASON),
    _argo("Workflow"),
    _argo("WorkflowTemplate"),
    _argo("ClusterWorkflowTemplate"),
    _argo("CronWorkflow", "spec.workflowSpec"),
)


def api_group(api_version: object) -> str:
    if not isinstance(api_version, str):
        return ""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def parse_path(path: str) -> tuple[str, ...]:
    """`a.b[*].c` -> ("a", "b", "*", "c")."""
    parts: list[str] = []
    for segment in path.split("."):
        match = re.fullmatch(r"([^\[\]]*)((?:\[\*\])*)", segment)
        if not match or not segment:
            raise ValueError(f"bad path segment {segment!r} in {path!r}")
        if match.group(1):
            parts.append(match.group(1))
        parts.extend("*" for _ in range(match.group(2).count("[*]")))
    return tuple(parts)


def iter_path(
    node: Any, parts: tuple[str, ...], prefix: tuple[PathPart, ...] = ()
) -> Iterator[tuple[tuple[PathPart, ...], dict[str, Any]]]:
    """Yield (concrete path, mapping) for every mapping the path reaches."""
    if not parts:
        if isinstance(node, dict):
            yield prefix, node
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        if isinstance(node, list):
            for index, item in enumerate(node):
                yield from iter_path(item, rest, (*prefix, index))
        elif isinstance(node, dict):
            for key, value in node.items():
                yield from iter_path(value, rest, (*prefix, str(key)))
    elif isinstance(node, dict) and head in node:
        yield from iter_path(node[head], rest, (*prefix, head))


class WorkloadTable:
    def __init__(self, kinds: tuple[WorkloadKind, ...]) -> None:
        self._by_key: dict[tuple[str, str], WorkloadKind] = {}
        for kind in kinds:  # later entries (user config) override built-ins
            self._by_key[(kind.api_group, kind.kind)] = kind
        self._parsed = {key: tuple(parse_path(p) for p in kind.pod_spec_paths) for key, kind in self._by_key.items()}

    def lookup(self, obj: Mapping[str, Any]) -> WorkloadKind | None:
        return self._by_key.get((api_group(obj.get("apiVersion")), str(obj.get("kind", ""))))

    def container_fields(self, obj: Mapping[str, Any]) -> tuple[str, ...]:
        kind = self.lookup(obj)
        return kind.container_fields if kind else ()

    def pod_specs(self, obj: dict[str, Any]) -> Iterator[tuple[tuple[PathPart, ...], dict[str, Any]]]:
        key = (api_group(obj.get("apiVersion")), str(obj.get("kind", "")))
        for parts in self._parsed.get(key, ()):
            yield from iter_path(obj, parts)


# The kubelet's annotation on the API copy of a static pod (k8s.io/kubernetes pkg/kubelet/types,
# ConfigMirrorAnnotationKey). Such a pod must stay what its manifest on the node says: the apiserver
# refuses a changed mirror pod, so neither the webhook nor the plan converts it.
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """A mirror pod of a static pod."""
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return isinstance(annotations, Mapping) and MIRROR_ANNOTATION in annotations
