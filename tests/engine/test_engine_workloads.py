"""Pod templates inside every workload kind of the table (workloads.py), `kind: List`, Argo, config kinds."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_support import MANAGED_BY, T134, as_pod, converted, errors, findings, pod, schema_errors
from pods import container, gpu

from dra_migrate.engine import Config, Severity, convert, parse_config
from dra_migrate.manifests.schema import validate_object

Path = tuple[str | int, ...]


def pod_spec() -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [container("worker", gpu(2), {"nvidia.com/gpu": "2", "cpu": "1"})]}


def pod_template() -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "demo"}}, "spec": pod_spec()}


def always(spec: dict[str, Any]) -> dict[str, Any]:
    spec["restartPolicy"] = "Always"
    return spec


def apps() -> dict[str, Any]:
    template = pod_template()
    always(template["spec"])
    return {"selector": {"matchLabels": {"app": "demo"}}, "template": template}


def replica_specs(*roles: str) -> dict[str, Any]:
    return {role: {"replicas": 1, "template": pod_template()} for role in roles}


def ray_cluster() -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": pod_template()},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 1, "rayStartParams": {}, "template": pod_template()},
            {"groupName": "big", "replicas": 1, "rayStartParams": {}, "template": pod_template()},
        ],
    }


def replicated_jobs() -> list[dict[str, Any]]:
    return [
        {"name": "node", "template": {"spec": {"template": pod_template()}}},
        {"name": "init", "template": {"spec": {"template": pod_template()}}},
    ]


# (apiVersion, kind, spec-level fields, pod spec paths, has a schema in 1.34)
CASES: list[tuple[str, str, dict[str, Any], list[Path], bool]] = [
    ("v1", "PodTemplate", {"template": pod_template()}, [("template", "spec")], True),
    (
        "v1",
        "ReplicationController",
        {
            "spec": {
                "replicas": 1,
                "selector": {"app": "demo"},
                "template": {**pod_template(), "spec": always(pod_spec())},
            }
        },
        [("spec", "template", "spec")],
        True,
    ),
    ("apps/v1", "Deployment", {"spec": apps()}, [("spec", "template", "spec")], True),
    ("apps/v1", "ReplicaSet", {"spec": apps()}, [("spec", "template", "spec")], True),
    (
        "apps/v1",
        "StatefulSet",
        {"spec": {**apps(), "serviceName": "demo"}},
        [("spec", "template", "spec")],
        True,
    ),
    ("apps/v1", "DaemonSet", {"spec": apps()}, [("spec", "template", "spec")], True),
    ("batch/v1", "Job", {"spec": {"template": pod_template()}}, [("spec", "template", "spec")], True),
    (
        "batch/v1",
        "CronJob",
        {"spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": pod_template()}}}},
        [("spec", "jobTemplate", "spec", "template", "spec")],
        True,
    ),
    (
        "kubeflow.org/v1",
        "PyTorchJob",
        {"spec": {"pytorchReplicaSpecs": replica_specs("Master", "Worker")}},
        [("spec", "pytorchReplicaSpecs", r, "template", "spec") for r in ("Master", "Worker")],
        False,
    ),
    (
        "kubeflow.org/v1",
        "TFJob",
        {"spec": {"tfReplicaSpecs": replica_specs("Chief", "Worker", "PS")}},
        [("spec", "tfReplicaSpecs", r, "template", "spec") for r in ("Chief", "Worker", "PS")],
        False,
    ),
    (
        "kubeflow.org/v2beta1",
        "MPIJob",
        {"spec": {"mpiReplicaSpecs": replica_specs("Launcher", "Worker")}},
        [("spec", "mpiReplicaSpecs", r, "template", "spec") for r in ("Launcher", "Worker")],
        False,
    ),
    (
        "kubeflow.org/v1",
        "XGBoostJob",
        {"spec": {"xgbReplicaSpecs": replica_specs("Master", "Worker")}},
        [("spec", "xgbReplicaSpecs", r, "template", "spec") for r in ("Master", "Worker")],
        False,
    ),
    (
        "kubeflow.org/v1",
        "PaddleJob",
        {"spec": {"paddleReplicaSpecs": replica_specs("Worker")}},
        [("spec", "paddleReplicaSpecs", "Worker", "template", "spec")],
        False,
    ),
    (
        "kubeflow.org/v1",
        "JAXJob",
        {"spec": {"jaxReplicaSpecs": replica_specs("Worker")}},
        [("spec", "jaxReplicaSpecs", "Worker", "template", "spec")],
        False,
    ),
    (
        "ray.io/v1",
        "RayCluster",
        {"spec": ray_cluster()},
        [
            ("spec", "headGroupSpec", "template", "spec"),
            *[("spec", "workerGroupSpecs", i, "template", "spec") for i in (0, 1)],
        ],
        False,
    ),
    (
        "ray.io/v1",
        "RayJob",
        {"spec": {"entrypoint": "python x.py", "rayClusterSpec": ray_cluster()}},
        [
            ("spec", "rayClusterSpec", "headGroupSpec", "template", "spec"),
            *[("spec", "rayClusterSpec", "workerGroupSpecs", i, "template", "spec") for i in (0, 1)],
        ],
        False,
    ),
    (
        "ray.io/v1",
        "RayService",
        {"spec": {"serveConfigV2": "", "rayClusterConfig": ray_cluster()}},
        [
            ("spec", "rayClusterConfig", "headGroupSpec", "template", "spec"),
            *[("spec", "rayClusterConfig", "workerGroupSpecs", i, "template", "spec") for i in (0, 1)],
        ],
        False,
    ),
    (
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        {"spec": {"replicatedJobs": replicated_jobs()}},
        [("spec", "replicatedJobs", i, "template", "spec", "template", "spec") for i in (0, 1)],
        False,
    ),
    (
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        {
            "spec": {
                "leaderWorkerTemplate": {"size": 2, "leaderTemplate": pod_template(), "workerTemplate": pod_template()}
            }
        },
        [("spec", "leaderWorkerTemplate", t, "spec") for t in ("leaderTemplate", "workerTemplate")],
        False,
    ),
    (
        "batch.volcano.sh/v1alpha1",
        "Job",
        {
            "spec": {
                "schedulerName": "volcano",
                "tasks": [
                    {"name": "a", "replicas": 1, "template": pod_template()},
                    {"name": "b", "template": pod_template()},
                ],
            }
        },
        [("spec", "tasks", i, "template", "spec") for i in (0, 1)],
        False,
    ),
    (
        "serving.kserve.io/v1beta1",
        "InferenceService",
        {
            "spec": {
                "predictor": {"containers": pod_spec()["containers"]},
                "transformer": {"containers": pod_spec()["containers"]},
            }
        },
        [("spec", "predictor"), ("spec", "transformer")],
        False,
    ),
    (
        "serving.kserve.io/v1alpha1",
        "LLMInferenceService",
        {
            "spec": {
                "template": pod_spec(),
                "worker": pod_spec(),
                "prefill": {"template": pod_spec(), "worker": pod_spec()},
            }
        },
        [("spec", "template"), ("spec", "worker"), ("spec", "prefill", "template"), ("spec", "prefill", "worker")],
        False,
    ),
    (
        "trainer.kubeflow.org/v1alpha1",
        "ClusterTrainingRuntime",
        {"spec": {"template": {"spec": {"replicatedJobs": replicated_jobs()}}}},
        [("spec", "template", "spec", "replicatedJobs", i, "template", "spec", "template", "spec") for i in (0, 1)],
        False,
    ),
    (
        "trainer.kubeflow.org/v1alpha1",
        "TrainingRuntime",
        {"spec": {"template": {"spec": {"replicatedJobs": replicated_jobs()}}}},
        [("spec", "template", "spec", "replicatedJobs", i, "template", "spec", "template", "spec") for i in (0, 1)],
        False,
    ),
]


def get(obj: Any, path: Path) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def render(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


@pytest.mark.parametrize(
    ("api_version", "kind", "fields", "paths", "has_schema"), CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES]
)
def test_pod_templates_in_workload_kinds(
    config: Config, api_version: str, kind: str, fields: dict[str, Any], paths: list[Path], has_schema: bool
) -> None:
    obj = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "demo", "namespace": "ml"},
        **copy.deepcopy(fields),
    }
    frozen = copy.deepcopy(obj)
    result = convert(obj, config)
    assert obj == frozen
    assert result.changed and not errors(result)
    (template,) = result.templates  # 2 GPUs everywhere: one shared template
    assert template["metadata"]["namespace"] == "ml"
    assert template["metadata"]["labels"] == dict([MANAGED_BY])
    name = template["metadata"]["name"]
    for path in paths:
        spec = get(result.object, path)
        assert spec["resourceClaims"] == [{"name": "worker-gpu", "resourceClaimTemplateName": name}], path
        assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1"}, "claims": [{"name": "worker-gpu"}]}, (
            path
        )
    converted_at = sorted(f.path for f in findings(result, "device-plugin-to-claim"))
    assert converted_at == sorted(f"{render(p)}.containers[0].resources" for p in paths)
    # Nothing outside the pod templates changed, but for the Ray start parameters KubeRay derived from limits.
    for path in paths:
        get(frozen, path).clear()
        get(result.object, path).clear()
    if api_version.startswith("ray.io/"):
        assert _pop_ray_gpus(result.object) == ["2"] * len(paths)
    assert result.object == frozen
    assert schema_errors(template) == ()


def _pop_ray_gpus(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        params = node.get("rayStartParams")
        if isinstance(params, dict) and "num-gpus" in params:
            found.append(params.pop("num-gpus"))
        for value in node.values():
            found.extend(_pop_ray_gpus(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_pop_ray_gpus(value))
    return found


@pytest.mark.parametrize(
    ("api_version", "kind", "fields", "paths", "has_schema"), CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES]
)
def test_converted_workloads_are_valid(
    config: Config, api_version: str, kind: str, fields: dict[str, Any], paths: list[Path], has_schema: bool
) -> None:
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "demo"}, **copy.deepcopy(fields)}
    result = convert(obj, config)
    assert validate_object(converted(result), T134).checked is has_schema
    if has_schema:
        assert schema_errors(converted(result)) == ()
    for path in paths:  # CRDs: each converted pod spec must still be a valid pod spec
        assert schema_errors(as_pod(get(result.object, path))) == (), path


def test_same_kind_name_in_another_group_is_not_a_workload(config: Config) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": apps()}
    result = convert(obj, config)
    assert not result.changed and result.object is obj
    # not converted, but not silent either: the GPU request in an unknown kind is reported
    assert {(f.rule, f.severity) for f in result.findings} == {("unknown-kind", Severity.WARNING)}


def test_list_of_objects(config: Config) -> None:
    gpu_pod = pod({"containers": [container("c", gpu(1))]}, name="a", namespace="team")
    twin = pod({"containers": [container("c", gpu(1))]}, name="b", namespace="team")
    elsewhere = pod({"containers": [container("c", gpu(1))]}, name="c", namespace="other")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    context = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "PodSchedulingContext", "metadata": {"name": "x"}}
    old_template = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "team"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu.example.com"}]}}},
    }
    items = [gpu_pod, twin, service, context, elsewhere, old_template]
    result = convert({"apiVersion": "v1", "kind": "List", "items": copy.deepcopy(items)}, config)
    assert result.changed
    out = converted(result)["items"]
    assert [i["kind"] for i in out] == ["Pod", "Pod", "Service", "Pod", "ResourceClaimTemplate"]
    assert out[2] == service
    assert out[4]["apiVersion"] == "resource.k8s.io/v1"
    assert sorted((t["metadata"]["namespace"], t["metadata"]["name"]) for t in result.templates) == sorted(
        {
            ("team", out[0]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]),
            ("other", out[3]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]),
        }
    )
    paths = {f.path for f in result.findings}
    assert "items[0].spec.containers[0].resources" in paths
    assert "items[4].spec.containers[0].resources" in paths
    assert "items[3]" in paths  # the dropped PodSchedulingContext
    for item in out:
        assert schema_errors(item) == ()


def test_unchanged_list_is_returned_as_is(config: Config) -> None:
    original = {"apiVersion": "v1", "kind": "List", "items": [pod({"containers": [container("c")]})]}
    result = convert(original, config)
    assert not result.changed and result.object is original


def test_list_items_that_are_no_objects_are_kept_where_they_were(config: Config) -> None:
    """A string or a null among a List's items is not valid Kubernetes, but it is the user's: a
    conversion of the other items must not lose it (it did, whenever another item changed)."""
    gpu_pod = pod({"containers": [container("c", gpu(1))]})
    items = [gpu_pod, "not an object", None, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]
    result = convert({"apiVersion": "v1", "kind": "List", "items": copy.deepcopy(items)}, config)
    assert result.changed
    out = converted(result)["items"]
    assert out[1:] == items[1:]
    assert out[0]["spec"]["resourceClaims"]


@pytest.mark.parametrize("kind", ["Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"])
def test_argo_templates_get_template_level_claims(config: Config, kind: str) -> None:
    """Argo Workflows 4.1 templates take `resourceClaims` (examples/resource-claims.yaml upstream)."""
    templates = [
        {"name": "train", "container": {"image": "x", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 1}}}},
        {"name": "idle", "container": {"image": "x", "resources": {"limits": {"cpu": 1}}}},
    ]
    spec: dict[str, Any] = {"templates": templates}
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "wf"},
        "spec": {"workflowSpec": spec} if kind == "CronWorkflow" else spec,
    }
    result = convert(workflow, config)
    out = converted(result)["spec"]
    train, idle = (out["workflowSpec"] if kind == "CronWorkflow" else out)["templates"]
    assert train["container"]["resources"] == {"limits": {"cpu": 1}, "claims": [{"name": "container-gpu"}]}
    assert [c["name"] for c in train["resourceClaims"]] == ["container-gpu"]
    assert idle == templates[1]
    assert [f.rule for f in findings(result, severity=Severity.WARNING)] == ["argo-resource-claims"]


def test_extra_workload_kinds_from_the_config_file() -> None:
    cfg = parse_config(
        {
            "workloads": [
                {
                    "apiGroup": "example.com",
                    "kind": "GpuJob",
                    "podSpecPaths": ["spec.runner.template.spec", "spec.pools[*].pod", "spec.roles.*.spec"],
                }
            ]
        }
    )
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "GpuJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "runner": {"template": {"spec": pod_spec()}},
            "pools": [{"pod": pod_spec()}, {"pod": pod_spec()}],
            "roles": {"a": {"spec": pod_spec()}},
        },
    }
    result = convert(obj, cfg)
    converted_at = sorted(f.path for f in findings(result, "device-plugin-to-claim"))
    assert converted_at == sorted(
        [
            "spec.runner.template.spec.containers[0].resources",
            "spec.pools[0].pod.containers[0].resources",
            "spec.pools[1].pod.containers[0].resources",
            "spec.roles.a.spec.containers[0].resources",
        ]
    )
    # Unknown without the config entry.
    assert not convert(obj, parse_config({})).changed


def test_core_kind_with_an_api_group_from_the_config() -> None:
    cfg = parse_config({"workloads": [{"kind": "Widget", "podSpecPaths": ["podSpec"]}]})
    obj = {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}, "podSpec": pod_spec()}
    assert convert(obj, cfg).changed


# --- design questions ------------------------------------------------------------------------------------


def test_kserve_model_format_container_gpu_is_converted_or_reported(config: Config) -> None:
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "torchserve"},
        "spec": {"predictor": {"pytorch": {"storageUri": "gs://x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}}},
    }
    result = convert(isvc, config)
    predictor = converted(result)["spec"]["predictor"]
    assert "limits" not in predictor["pytorch"]["resources"]
    assert predictor["pytorch"]["resources"]["claims"] == [{"name": "pytorch-gpu"}]
    assert predictor["resourceClaims"] == [
        {"name": "pytorch-gpu", "resourceClaimTemplateName": result.templates[0]["metadata"]["name"]}
    ]


def test_trainjob_resources_per_node_is_reported(config: Config) -> None:
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t"},
        "spec": {
            "runtimeRef": {"name": "torch"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}},
        },
    }
    result = convert(job, config)
    assert any(f.severity is Severity.WARNING and "nvidia.com/gpu" in f.path for f in result.findings)
