"""Fixtures of the deploy/ tests: the kubectl and helm binaries (see deploy_support.py)."""

from __future__ import annotations

import pytest
from deploy_support import BUILD_HELM, Helm, cache_root, find_helm, find_kubectl, missing_tool


@pytest.fixture(scope="module")
def kubectl() -> str:
    found = find_kubectl()
    if found is None:
        missing_tool(
            "kubectl not found: set $KUBECTL, put kubectl on PATH, or build it with "
            f"tests/e2e/build-control-plane.sh (looked in {cache_root()}/k8s-v1.34.*/kubectl)"
        )
    return found


@pytest.fixture(scope="module")
def helm() -> Helm:
    found = find_helm()
    if found is None:
        missing_tool(
            f"helm not found: set $HELM, put helm on PATH, or build it with {BUILD_HELM} "
            f"(looked in {cache_root()}/helm-v*/helm)"
        )
    return Helm(found)
