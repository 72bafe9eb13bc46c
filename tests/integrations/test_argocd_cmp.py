"""The Argo CD plugin (deploy/argocd-cmp/plugin.yaml) run as the repo-server runs it, over a
kustomize application (real kustomize), Helm charts (real helm) and a plain directory: its stdout
must be the render converted, objects valid for the release; a failure must be a non-zero exit
with the reason on stderr and nothing on stdout."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import corpus
import helm_charts
import pytest
from argocd_repo_server import Application, generate_manifests, plugin_spec
from integration_support import assert_on_claims, assert_valid, by_kind, objects_of, requested_count

from dra_migrate.argocd.environment import SETTINGS, PluginError, Settings, cluster_minor, read_application

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
  labels: {app: trainer}
spec:
  replicas: 1
  selector:
    matchLabels: {app: trainer}
  template:
    metadata:
      labels: {app: trainer}
    spec:
      containers:
        - name: trainer
          image: registry.example.com/trainer:1.0
          resources:
            limits:
              nvidia.com/gpu: 2
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: trainer
spec:
  selector: {app: trainer}
  ports:
    - port: 8080
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _kustomize_repository(root: Path) -> Path:
    _write(
        root,
        {
            "apps/training/base/deployment.yaml": DEPLOYMENT,
            "apps/training/base/service.yaml": SERVICE,
            "apps/training/base/kustomization.yaml": "resources: [deployment.yaml, service.yaml]\n",
            "apps/training/prod/kustomization.yaml": """\
                resources: [../base]
                namespace: ml
                images:
                  - name: registry.example.com/trainer
                    newTag: "2.1"
                patches:
                  - target: {kind: Deployment, name: trainer}
                    patch: |-
                      - op: replace
                        path: /spec/replicas
                        value: 3
                """,
        },
    )
    return root


def test_a_kustomize_application_syncs_its_render_converted(
    tmp_path: Path, kustomize: Path, sidecar: dict[str, str]
) -> None:
    repository = _kustomize_repository(tmp_path / "repo")
    app = Application(repository, "apps/training/prod")
    step = generate_manifests(app, sidecar)
    assert step.returncode == 0, step.stderr
    render = subprocess.run(
        [str(kustomize), "build", str(repository / app.path)], capture_output=True, text=True, check=True
    ).stdout

    objects = objects_of(step.stdout)
    assert_valid(objects, "1.34.0")  # KUBE_VERSION v1.34.2: written for 1.34
    [deployment] = by_kind(objects, "Deployment")
    # kustomize's render: the overlay's namespace, image tag and patch
    assert deployment["metadata"]["namespace"] == "ml" and deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/trainer:2.1"
    [template] = assert_on_claims(deployment, by_kind(objects, "ResourceClaimTemplate"))
    assert template["apiVersion"] == "resource.k8s.io/v1" and requested_count(template) == 2
    # everything the render holds is synced, the Service untouched
    assert by_kind(objects, "Service") == by_kind(objects_of(render), "Service")
    assert {(o["kind"], o["metadata"]["name"]) for o in objects_of(render)} <= {
        (o["kind"], o["metadata"]["name"]) for o in objects
    }
    assert "1 new template" in step.stderr  # convert's report, shown by Argo CD with --loglevel=info


def test_a_configuration_file_and_validation_from_the_applications_settings(
    tmp_path: Path, sidecar: dict[str, str]
) -> None:
    repository = _kustomize_repository(tmp_path / "repo")
    _write(repository, {"dra-migrate.yaml": "resourceTolerations: false\n"})
    plain = generate_manifests(Application(repository, "apps/training/prod"), sidecar)
    configured = generate_manifests(
        Application(
            repository,
            "apps/training/prod",
            parameters=[{"name": "config", "string": "../../../dra-migrate.yaml"}],  # at the repository's root
            env={"VALIDATE": "true"},
        ),
        sidecar,
    )
    assert plain.returncode == configured.returncode == 0, plain.stderr + configured.stderr
    [without_config] = by_kind(objects_of(plain.stdout), "Deployment")
    [with_config] = by_kind(objects_of(configured.stdout), "Deployment")
    assert "tolerations" in without_config["spec"]["template"]["spec"]
    assert "tolerations" not in with_config["spec"]["template"]["spec"]  # the file's setting applied


CHART = {
    "Chart.yaml": """\
        apiVersion: v2
        name: inference
        version: 0.3.0
        dependencies:
          - name: gpu-monitor
            version: 0.1.0
            repository: file://../../charts/gpu-monitor
        """,
    "values.yaml": "gpus: 1\nimage: registry.example.com/serve:1.0\n",
    "values-prod.yaml": "gpus: 4\n",
    "templates/deployment.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}-server
          namespace: {{ .Release.Namespace }}
        spec:
          selector:
            matchLabels: {app: {{ .Release.Name }}}
          template:
            metadata:
              labels: {app: {{ .Release.Name }}}
            spec:
              containers:
                - name: server
                  image: {{ .Values.image }}
                  resources:
                    limits:
                      nvidia.com/gpu: {{ .Values.gpus }}
        """,
}
SUBCHART = {
    "Chart.yaml": "apiVersion: v2\nname: gpu-monitor\nversion: 0.1.0\n",
    "templates/configmap.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-gpu-monitor
        data:
          kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
        """,
}


def _chart_repository(root: Path) -> Path:
    _write(root / "apps" / "inference", CHART)
    _write(root / "charts" / "gpu-monitor", SUBCHART)
    return root


def test_a_helm_chart_syncs_its_render_with_the_applications_values_converted(
    tmp_path: Path, helm: Path, sidecar: dict[str, str]
) -> None:
    repository = _chart_repository(tmp_path / "repo")
    app = Application(
        repository,
        "apps/inference",
        name="llm",
        namespace="serving",
        parameters=[{"name": "values-files", "array": ["values-prod.yaml"]}],
    )
    step = generate_manifests(app, sidecar)
    assert step.returncode == 0, step.stderr
    assert "fetching chart dependencies: gpu-monitor" not in step.stdout
    assert list((repository / "apps/inference/charts").glob("gpu-monitor-0.1.0.tgz")), "init built the dependency"

    objects = objects_of(step.stdout)
    assert_valid(objects, "1.34.0")
    [deployment] = by_kind(objects, "Deployment")
    assert deployment["metadata"] == {"name": "llm-server", "namespace": "serving"}  # release = application
    [template] = assert_on_claims(deployment, by_kind(objects, "ResourceClaimTemplate"))
    assert requested_count(template) == 4, "values-prod.yaml applies"
    [monitor] = by_kind(objects, "ConfigMap")  # the dependency init fetched, rendered for the cluster's version
    assert monitor["data"]["kubeVersion"] == "v1.34.2"


def test_without_init_a_missing_dependency_fails_with_helms_message(
    tmp_path: Path, helm: Path, sidecar: dict[str, str]
) -> None:
    app = Application(_chart_repository(tmp_path / "repo"), "apps/inference")
    step = generate_manifests(app, sidecar, init=False)
    assert step.returncode == 2 and step.stdout == ""
    assert "gpu-monitor" in step.stderr  # helm names the dependency it lacks
    assert "dra-migrate argocd-cmp generate: error: helm template failed (exit 1)" in step.stderr


def test_kustomize_build_options_are_the_operators(tmp_path: Path, sidecar: dict[str, str]) -> None:
    """Options such as a load restrictor (Argo CD's kustomize.buildOptions) come from the sidecar's
    operator, not from the application."""
    repository = _kustomize_repository(tmp_path / "repo")
    _write(
        repository / "apps/training",
        {
            "shared/gpus.yaml": """\
                - op: replace
                  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu
                  value: 4
                """,
            "staging/kustomization.yaml": """\
                resources: [../base]
                patches:
                  - path: ../shared/gpus.yaml
                    target: {kind: Deployment, name: trainer}
                """,
        },
    )
    app = Application(repository, "apps/training/staging")
    refused = generate_manifests(app, sidecar)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "is not in or below" in refused.stderr  # kustomize's own words, then which step failed
    assert "dra-migrate argocd-cmp generate: error: kustomize build failed" in refused.stderr

    operator = {**sidecar, "DRA_MIGRATE_KUSTOMIZE_BUILD_OPTIONS": "--load-restrictor LoadRestrictionsNone"}
    step = generate_manifests(app, operator)
    assert step.returncode == 0, step.stderr
    objects = objects_of(step.stdout)
    assert_valid(objects, "1.34.0")
    [template] = assert_on_claims(by_kind(objects, "Deployment")[0], by_kind(objects, "ResourceClaimTemplate"))
    assert requested_count(template) == 4


def test_a_real_gpu_chart(tmp_path: Path, helm: Path, sidecar: dict[str, str]) -> None:
    """vLLM production-stack's serving-engine chart, from the shared corpus, with 2 GPUs in its values."""
    corpus.require("templated")
    repository = tmp_path / "repo"
    helm_charts.vllm_chart(repository / "serving")
    app = Application(
        repository,
        "serving/vllm-stack",
        name="vllm",
        namespace="inference",
        kube_version="v1.37.0",
        parameters=[{"name": "values-files", "array": ["../gpu-values.yaml"]}],  # beside the chart, in the repo
    )
    step = generate_manifests(app, sidecar)
    assert step.returncode == 0, step.stderr
    objects = objects_of(step.stdout)
    assert_valid(objects, "1.37.0")
    [deployment] = by_kind(objects, "Deployment")
    [template] = assert_on_claims(deployment, by_kind(objects, "ResourceClaimTemplate"))
    assert requested_count(template) == 2 and template["metadata"]["namespace"] == "inference"


def test_a_plain_directory_and_a_target_version_parameter(tmp_path: Path, sidecar: dict[str, str]) -> None:
    repository = tmp_path / "repo"
    _write(
        repository / "manifests",
        {
            "deployment.yaml": DEPLOYMENT.replace("  labels:", "  namespace: ml\n  labels:", 1),
            "service.json": '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "ml"},'
            ' "spec": {"ports": [{"port": 80}]}}',
            "notes.txt": "not a manifest",
            "nested/ignored.yaml": DEPLOYMENT.replace("name: trainer", "name: nested"),
        },
    )
    # the parameter wins over both the env entry and the cluster's version
    app = Application(
        repository,
        "manifests",
        env={"TARGET_VERSION": "1.33"},
        parameters=[{"name": "target-version", "string": "1.32"}],
    )
    step = generate_manifests(app, sidecar)
    assert step.returncode == 0, step.stderr
    objects = objects_of(step.stdout)
    assert_valid(objects, "1.32.0")
    assert sorted(o["metadata"]["name"] for o in objects if o["kind"] != "ResourceClaimTemplate") == ["api", "trainer"]
    [template] = assert_on_claims(by_kind(objects, "Deployment")[0], by_kind(objects, "ResourceClaimTemplate"))
    assert template["apiVersion"] == "resource.k8s.io/v1beta1"

    recursed = generate_manifests(Application(repository, "manifests", env={"RECURSE": "true"}), sidecar)
    assert recursed.returncode == 0, recursed.stderr
    assert {o["metadata"]["name"] for o in by_kind(objects_of(recursed.stdout), "Deployment")} == {"trainer", "nested"}


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("broken kustomization", "dra-migrate argocd-cmp generate: error: kustomize build failed (exit 1)"),
        ("values file outside the repository", "values file '../../../outside.yaml' is outside the application's"),
        ("values file missing", "values file 'values-staging.yaml': no such file in the application's repository"),
        ("cluster too old", "KUBE_VERSION v1.30.4 (the destination cluster's): target version 1.30 is not supported"),
        ("unknown parameter", "parameter 'value-files' is not one of this plugin's"),
        ("bad boolean", "plugin env VALIDATE is 'yes': it takes true or false"),
        ("empty render", "kustomize build rendered no object; an empty render is refused"),
        ("unconvertible manifest", "requests-limits-differ"),
        ("validate: an object the release rejects", "schema-input: Service invalid for Kubernetes 1.34"),
    ],
)
def test_a_failure_is_a_non_zero_exit_with_the_reason_on_stderr(
    tmp_path: Path, sidecar: dict[str, str], request: pytest.FixtureRequest, case: str, message: str
) -> None:
    if case.startswith("values file"):
        request.getfixturevalue("helm")  # a chart: skips without helm
    repository = tmp_path / "repo"
    _kustomize_repository(repository)
    _chart_repository(repository)
    (tmp_path / "outside.yaml").write_text("gpus: 8\n", encoding="utf-8")
    apps = {
        "broken kustomization": Application(repository, "apps/broken"),
        "values file outside the repository": Application(
            repository, "apps/inference", parameters=[{"name": "values-files", "array": ["../../../outside.yaml"]}]
        ),
        "values file missing": Application(repository, "apps/inference", env={"VALUES_FILES": "values-staging.yaml"}),
        "cluster too old": Application(repository, "apps/training/prod", kube_version="v1.30.4"),
        "unknown parameter": Application(
            repository, "apps/training/prod", parameters=[{"name": "value-files", "array": ["x.yaml"]}]
        ),
        "bad boolean": Application(repository, "apps/training/prod", env={"VALIDATE": "yes"}),
        "empty render": Application(repository, "apps/empty"),
        "unconvertible manifest": Application(repository, "apps/unconvertible"),
        "validate: an object the release rejects": Application(
            repository, "apps/invalid", parameters=[{"name": "validate", "string": "true"}]
        ),
    }
    _write(
        repository / "apps",
        {
            "broken/kustomization.yaml": "resources: [missing.yaml]\n",
            "empty/kustomization.yaml": "resources: []\n",
            "invalid/kustomization.yaml": "resources: [service.yaml]\n",
            "invalid/service.yaml": SERVICE.replace("  ports:", "  portz: 1\n  ports:"),
            # requests and limits of the device differ: convert leaves the pod and says why
            "unconvertible/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "    - name: c\n      image: i\n      resources:\n        requests: {nvidia.com/gpu: 1}\n"
            "        limits: {nvidia.com/gpu: 2}\n",
        },
    )
    step = generate_manifests(apps[case], sidecar)
    assert step.returncode == 2, step.stderr
    assert step.stdout == "", "Argo CD must get no manifests from a failed generation"
    assert message in step.stderr
    assert "Traceback" not in step.stderr


def test_settings_from_parameters_and_env_entries() -> None:
    environ = {
        "ARGOCD_APP_PARAMETERS": '[{"name": "values-files", "array": ["a.yaml", "b.yaml"]},'
        ' {"name": "validate", "string": "true"}]',
        "ARGOCD_ENV_VALUES_FILES": "ignored.yaml",
        "ARGOCD_ENV_RELEASE_NAME": "serve",
        "ARGOCD_ENV_RECURSE": "false",
        "KUBE_API_VERSIONS": "apps/v1, v1,",
    }
    app = read_application(environ)
    assert app.settings == Settings(values_files=("a.yaml", "b.yaml"), release_name="serve", validate=True)
    assert app.api_versions == ("apps/v1", "v1")
    assert read_application({"ARGOCD_APP_PARAMETERS": "null"}).settings == Settings()
    with pytest.raises(PluginError, match="parameter 'values-files' takes an array of strings"):
        read_application({"ARGOCD_APP_PARAMETERS": '[{"name": "values-files", "string": "a.yaml"}]'})
    with pytest.raises(PluginError, match="ARGOCD_APP_PARAMETERS is not JSON"):
        read_application({"ARGOCD_APP_PARAMETERS": "[{"})
    assert [cluster_minor(v) for v in ("v1.34.2-eks-1a2b3c", "1.33.1", "", "latest")] == ["1.34", "1.33", None, None]


def test_the_plugin_announces_every_setting_it_reads() -> None:
    """The UI's parameters (plugin.yaml) and what generate reads are the same names and shapes."""
    announced = {p["name"]: p for p in plugin_spec()["parameters"]["static"]}
    assert set(announced) == set(SETTINGS)
    for name, kind in SETTINGS.items():
        assert (announced[name].get("collectionType") == "array") == (kind == "array"), name
