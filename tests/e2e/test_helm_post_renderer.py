"""What `helm template --post-renderer dra-migrate` makes of a real GPU chart is accepted by the real
apiserver of every supported release (server-side dry run, strict field validation)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from helm_charts import helm_environment, install_plugin, vllm_chart

from .cluster_fixtures import Kube, create_namespace, delete_namespace
from .controlplane import ControlPlane
from .test_helm_install import find_helm


def test_a_post_rendered_gpu_chart_is_accepted(control_plane: ControlPlane, kube: Kube, tmp_path: Path) -> None:
    helm = find_helm()
    environment = helm_environment(tmp_path / "helm")
    install_plugin(helm, environment)
    chart = vllm_chart(tmp_path)
    namespace = create_namespace(kube, "e2e-helm-pr")
    try:
        done = subprocess.run(
            [
                helm, "template", "demo", str(chart), "--namespace", namespace, "-f", str(tmp_path / "gpu-values.yaml"),
                "--post-renderer", "dra-migrate",
                f"--post-renderer-args=--target-version={control_plane.spec.target}",
            ],
            env=environment, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        objects = [d for d in yaml.safe_load_all(done.stdout) if d]
        kinds = sorted(o["kind"] for o in objects)
        assert kinds == ["Deployment", "ResourceClaimTemplate"], kinds
        for obj in objects:  # the apiserver's answer; an error raises with its message
            kube.create(obj, namespace, dry_run="All", field_validation="Strict")
    finally:
        delete_namespace(kube, namespace)
