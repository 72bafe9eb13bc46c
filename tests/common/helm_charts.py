"""A real GPU chart and the dra-migrate Helm post-renderer plugin, for the tests that render with
the real helm (tests/deploy for the output, tests/e2e for the apiserver's answer).

The chart is vLLM production-stack's own serving-engine template, helpers and values, taken as they
are from the shared corpus (templated/), with a Chart.yaml around them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN = REPO_ROOT / "deploy" / "helm-postrenderer"
_VLLM = "vllm-project__production-stack__helm__"
GPU_VALUES = """\
servingEngineSpec:
  modelSpec:
  - name: llama
    repository: vllm/vllm-openai
    tag: latest
    modelURL: meta-llama/Llama-3.1-8B-Instruct
    replicaCount: 1
    requestCPU: 6
    requestMemory: 16Gi
    requestGPU: 2
"""


def vllm_chart(directory: Path) -> Path:
    """The vLLM serving-engine chart under `directory`, and a values file asking for 2 GPUs beside it."""
    source = corpus.require("templated")
    chart = directory / "vllm-stack"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: vllm-stack\nversion: 0.1.0\n", encoding="utf-8")
    shutil.copyfile(source / f"{_VLLM}values.yaml", chart / "values.yaml")
    shutil.copyfile(source / f"{_VLLM}templates___helpers.tpl", chart / "templates" / "_helpers.tpl")
    deployment = source / f"{_VLLM}templates__deployment-vllm-multi.yaml"
    shutil.copyfile(deployment, chart / "templates" / "deployment-vllm-multi.yaml")
    (directory / "gpu-values.yaml").write_text(GPU_VALUES, encoding="utf-8")
    return chart


def helm_environment(home: Path) -> dict[str, str]:
    """A helm of its own (config, cache, plugins under `home`) that finds this checkout's dra-migrate."""
    bin_directory = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_DATA_HOME": str(home / "data"),
        "PATH": f"{bin_directory}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def install_plugin(helm: str, environment: dict[str, str]) -> None:
    done = subprocess.run(
        [helm, "plugin", "install", str(PLUGIN)], env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"helm plugin install failed:\n{done.stdout}\n{done.stderr}"
