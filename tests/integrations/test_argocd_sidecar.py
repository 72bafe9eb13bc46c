"""deploy/argocd-cmp as a Component of the kustomization that installs Argo CD, built with the
real kustomize: the sidecar Argo CD's plugin guide asks for, wired to volumes that exist, and the
plugin.yaml the tests run is the one it mounts."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path, PurePosixPath
from typing import Any

from integration_support import REPO_ROOT, Obj, assert_valid, by_kind, objects_of

COMPONENT = REPO_ROOT / "deploy" / "argocd-cmp"
# The parts of Argo CD's manifests/base/repo-server Deployment a sidecar plugin relies on: the
# var-files volume copyutil fills with argocd-cmp-server, the plugins socket directory, its tmp.
REPO_SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-repo-server
  labels: {app.kubernetes.io/name: argocd-repo-server}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: argocd-repo-server}
  template:
    metadata:
      labels: {app.kubernetes.io/name: argocd-repo-server}
    spec:
      containers:
        - name: argocd-repo-server
          image: quay.io/argoproj/argocd:latest
          args: [/usr/local/bin/argocd-repo-server]
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
            - {name: plugins, mountPath: /home/argocd/cmp-server/plugins}
      initContainers:
        - name: copyutil
          image: quay.io/argoproj/argocd:latest
          command: [sh, -c]
          args:
            - /bin/cp --update=none /usr/local/bin/argocd /var/run/argocd/argocd
              && /bin/ln -s /var/run/argocd/argocd /var/run/argocd/argocd-cmp-server
          volumeMounts:
            - {name: var-files, mountPath: /var/run/argocd}
      volumes:
        - {name: tmp, emptyDir: {}}
        - {name: var-files, emptyDir: {}}
        - {name: plugins, emptyDir: {}}
"""


# docs/ci-integrations.md: how an operator gives kustomize build options to the plugin
BUILD_OPTIONS = """\
configMapGenerator:
  - name: dra-migrate-cmp-options
    literals:
      - kustomize-build-options=--load-restrictor LoadRestrictionsNone
"""


def _build(tmp_path: Path, kustomize: Path, extra: str = "") -> list[Obj]:
    root = tmp_path / "argocd"
    root.mkdir()
    (root / "repo-server.yaml").write_text(REPO_SERVER, encoding="utf-8")
    component = os.path.relpath(COMPONENT, root)
    (root / "kustomization.yaml").write_text(
        textwrap.dedent(f"""\
            namespace: argocd
            resources: [repo-server.yaml]
            components: [{component}]
            images:
              - name: dra-migrate
                newName: registry.example.com/dra-migrate
                newTag: 0.1.0
              - name: quay.io/argoproj/argocd
                newTag: v3.1.8
            """)
        + extra,
        encoding="utf-8",
    )
    done = subprocess.run([str(kustomize), "build", str(root)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return objects_of(done.stdout)


def _named(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [item] = [i for i in items if i["name"] == name]
    return item


def test_the_component_adds_the_plugin_sidecar_to_argocd_repo_server(tmp_path: Path, kustomize: Path) -> None:
    objects = _build(tmp_path, kustomize)
    assert_valid(objects, "1.34.0")
    [deployment] = by_kind(objects, "Deployment")
    [config_map] = by_kind(objects, "ConfigMap")
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    containers = pod["containers"] + pod["initContainers"]
    for container in containers:  # every mount names a volume of the pod
        assert {m["name"] for m in container.get("volumeMounts", [])} <= set(volumes), container["name"]

    repo_server = _named(pod["containers"], "argocd-repo-server")
    assert pod["containers"][0] is repo_server and repo_server["image"] == "quay.io/argoproj/argocd:v3.1.8"
    sidecar = _named(pod["containers"], "dra-migrate-cmp")
    assert sidecar["image"] == "registry.example.com/dra-migrate:0.1.0"
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]  # copyutil's link, in var-files
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
    assert mounts["/var/run/argocd"]["name"] == "var-files"
    assert mounts["/home/argocd/cmp-server/plugins"]["name"] == "plugins"
    # the plugin's configuration: this directory's plugin.yaml, from the (hash-named) ConfigMap
    config = mounts["/home/argocd/cmp-server/config/plugin.yaml"]
    assert config["subPath"] == "plugin.yaml"
    assert volumes[config["name"]]["configMap"]["name"] == config_map["metadata"]["name"]
    assert config_map["data"]["plugin.yaml"] == (COMPONENT / "plugin.yaml").read_text(encoding="utf-8")
    # a /tmp of its own (Argo CD: never the repo-server's), holding helm's homes on a read-only root
    tmp = mounts["/tmp"]["name"]
    assert tmp != "tmp" and "emptyDir" in volumes[tmp]
    environment = {e["name"]: e["value"] for e in sidecar["env"] if "value" in e}
    assert "PATH" not in environment, "the image's PATH finds dra-migrate"
    for variable in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        assert PurePosixPath(environment[variable]).is_relative_to("/tmp")

    # helm and kustomize: copied from the Argo CD image (the same tag) to where the plugin looks for them
    tools = _named(pod["initContainers"], "dra-migrate-tools")
    assert tools["image"] == "quay.io/argoproj/argocd:v3.1.8"
    *sources, destination = tools["command"][1:]
    [tools_mount] = tools["volumeMounts"]
    assert destination.rstrip("/") == tools_mount["mountPath"]
    assert mounts[tools_mount["mountPath"]]["name"] == tools_mount["name"]
    copied = {PurePosixPath(destination) / PurePosixPath(s).name for s in sources}
    looked_up = {PurePosixPath(environment[v]) for v in ("DRA_MIGRATE_KUSTOMIZE", "DRA_MIGRATE_HELM")}
    assert looked_up == copied


def test_an_operator_gives_kustomize_build_options_through_a_configmap(tmp_path: Path, kustomize: Path) -> None:
    objects = _build(tmp_path, kustomize, BUILD_OPTIONS)
    assert_valid(objects, "1.34.0")
    [deployment] = by_kind(objects, "Deployment")
    [options_map] = [o for o in by_kind(objects, "ConfigMap") if "kustomize-build-options" in o["data"]]
    assert options_map["data"]["kustomize-build-options"] == "--load-restrictor LoadRestrictionsNone"
    sidecar = _named(deployment["spec"]["template"]["spec"]["containers"], "dra-migrate-cmp")
    [options] = [e for e in sidecar["env"] if e["name"] == "DRA_MIGRATE_KUSTOMIZE_BUILD_OPTIONS"]
    reference = options["valueFrom"]["configMapKeyRef"]
    # the generated (hash-suffixed) name: a change of options rolls the repo-server
    assert reference["name"] == options_map["metadata"]["name"] != "dra-migrate-cmp-options"
