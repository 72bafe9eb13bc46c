"""`helm install --post-renderer dra-migrate` of a chart whose pre-install hook asks for a GPU, on the
real control plane: Helm creates the hook's ResourceClaimTemplate as a hook before it, so the hook's
pod gets an allocated claim while Helm still runs the pre-install phase. (No kubelet runs the pod, so
it never completes and Helm is stopped once the claim is there.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from helm_charts import helm_environment, install_plugin
from polling import wait_for

from .cluster_fixtures import FakeCluster, Kube, create_namespace, delete_namespace, wait_for_pod_claims
from .controlplane import ControlPlane
from .test_helm_install import find_helm

RESOURCE_API = "resource.k8s.io/v1"

# A Pod hook, which Helm watches until it completes, as it does a Job (this control plane runs no job
# controller and no kubelet: the pod is scheduled and its claim allocated, and it never completes).
HOOK_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-warmup
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "-5"
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: registry.k8s.io/pause:3.10
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def _chart(directory: Path) -> Path:
    chart = directory / "hooked"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hooked\nversion: 0.1.0\n", encoding="utf-8")
    (chart / "templates" / "warmup.yaml").write_text(HOOK_POD, encoding="utf-8")
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"
    (chart / "templates" / "settings.yaml").write_text(config, encoding="utf-8")
    return chart


def test_a_pre_install_gpu_hook_gets_its_claim_during_the_hook_phase(
    control_plane: ControlPlane, kube: Kube, fake_cluster: FakeCluster, tmp_path: Path
) -> None:
    assert fake_cluster.nvidia_dra_nodes, "the fake cluster has DRA GPU nodes"
    helm = find_helm()
    environment = helm_environment(tmp_path / "helm")
    install_plugin(helm, environment)
    namespace = create_namespace(kube, "e2e-helm-hook")
    target = control_plane.spec.target
    command = [
        helm, "--kubeconfig", str(control_plane.kubeconfig), "--namespace", namespace, "install", "hooked",
        str(_chart(tmp_path)), "--timeout", "120s", "--post-renderer", "dra-migrate",
        f"--post-renderer-args=--target-version={target}",
    ]  # fmt: skip
    installing = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def helm_still_runs() -> bool:
        if installing.poll() is not None:  # helm must still be in the pre-install phase
            output, errors = installing.communicate()
            raise AssertionError(f"helm ended early ({installing.returncode}):\n{output}\n{errors}")
        return True

    try:
        wait_for(lambda: helm_still_runs() and kube.get("v1", "Pod", "hooked-warmup", namespace), what="the hook pod")
        wait_for_pod_claims(kube, namespace, "hooked-warmup")
        # still in the pre-install phase: the release's own manifests are not created yet
        assert installing.poll() is None and kube.get("v1", "ConfigMap", "settings", namespace) is None
        [template] = kube.list(RESOURCE_API, "ResourceClaimTemplate", namespace)
        assert template["metadata"]["annotations"]["helm.sh/hook"] == "pre-install"
    finally:
        installing.kill()
        installing.communicate(timeout=60)
        delete_namespace(kube, namespace)
