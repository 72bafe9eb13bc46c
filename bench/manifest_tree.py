"""A manifest tree like a GitOps repository's, for the translator benchmarks.

    build_tree(root, documents=20_000)      # ~2,000 files of ~10 documents

Mix (by document): 10% GPU workloads taken as text from the shared corpus (Pods, Deployments,
Jobs, Kubeflow/Ray/KServe CRs that request devices), 2% v1beta1 `resource.k8s.io` objects from the
corpus, 1% CustomResourceDefinitions with a real OpenAPI schema (pod templates expanded from the
Kubernetes 1.34 OpenAPI that kubernetes-validate ships), and the rest Helm-rendered chart output:
`# Source:` headers, chart labels and checksum annotations, Deployments, StatefulSets, DaemonSets,
Jobs and CronJobs with probes, env, volumes, CPU/memory resources, affinity and tolerations,
ConfigMaps holding scripts and config files, Secrets, Services, RBAC, Ingresses, HPAs, PDBs,
NetworkPolicies. Deterministic for a seed.

    gpu_file(documents)                     # one stream of GPU Deployments (the editing path)
"""

from __future__ import annotations

import functools
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "common"))
import corpus  # noqa: E402 - the tests' one way to find the shared corpus

CORPUS = corpus.CORPUS
CORPUS_VARIABLE = corpus.ENVIRONMENT_VARIABLE
GPU_KINDS = {"Pod", "Deployment", "Job", "StatefulSet", "PyTorchJob", "MPIJob", "RayCluster", "RayJob", "CronJob"}
DOCS_PER_FILE = 10


def _documents(path: Path) -> Iterator[str]:
    text = path.read_text(encoding="utf-8")
    for chunk in text.split("\n---"):
        chunk = chunk.strip("-\n") + "\n"
        try:
            doc = yaml.load(chunk, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("kind"), str):
            yield chunk


def require_corpus(part: str) -> None:
    """A benchmark built from the corpus is skipped, saying what is missing, in a clone without it."""
    reason = corpus.missing(part)
    if reason is not None:
        print(f"benchmark skipped: {reason}", file=sys.stderr)
        raise SystemExit(0)


@functools.cache
def gpu_documents() -> tuple[str, ...]:
    """Single workload documents from the corpus that request a device, kept as their exact text."""
    require_corpus("legacy")
    found = [
        doc
        for path in sorted((CORPUS / "legacy").glob("*.y*ml"))
        for doc in _documents(path)
        if yaml.load(doc, Loader=yaml.CSafeLoader).get("kind") in GPU_KINDS
        and any(name in doc for name in ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com", "habana.ai"))
    ]
    if not found:
        raise SystemExit(f"no GPU workloads found under {CORPUS / 'legacy'}")
    return tuple(found)


@functools.cache
def dra_documents() -> tuple[str, ...]:
    require_corpus("dra-versions")
    found = [
        doc
        for path in sorted((CORPUS / "dra-versions").rglob("*.y*ml"))
        for doc in _documents(path)
        if "resource.k8s.io/v1beta1" in doc
    ]
    if not found:
        raise SystemExit(f"no v1beta1 DRA objects found under {CORPUS / 'dra-versions'}")
    return tuple(found)


# ---------------------------------------------------------------------------------------------
# Helm-rendered chart output


def _labels(chart: str, component: str, indent: int) -> str:
    pad = " " * indent
    return (
        f"{pad}helm.sh/chart: {chart}-1.4.2\n{pad}app.kubernetes.io/name: {chart}\n"
        f"{pad}app.kubernetes.io/instance: {chart}-prod\n{pad}app.kubernetes.io/component: {component}\n"
        f'{pad}app.kubernetes.io/version: "2.7.1"\n{pad}app.kubernetes.io/managed-by: Helm\n'
    )


def _head(api: str, kind: str, chart: str, component: str, kind_file: str, namespace: str) -> str:
    return (
        f"# Source: {chart}/templates/{kind_file}.yaml\napiVersion: {api}\nkind: {kind}\n"
        f"metadata:\n  name: {chart}-{component}\n  namespace: {namespace}\n  labels:\n{_labels(chart, component, 4)}"
    )


def _pod_spec(rng: random.Random, chart: str, component: str, indent: int) -> str:
    pad = " " * indent
    port = rng.choice([8080, 9090, 3000, 8443])
    env = "".join(
        f"{pad}    - name: {name}\n{pad}      {value}\n"
        for name, value in rng.sample(
            [
                ("LOG_LEVEL", 'value: "info"'),
                ("POD_NAME", "valueFrom:\n" + pad + "        fieldRef:\n" + pad + "          fieldPath: metadata.name"),
                (
                    "DB_PASSWORD",
                    "valueFrom:\n"
                    + pad
                    + "        secretKeyRef:\n"
                    + pad
                    + f"          name: {chart}-secret\n"
                    + pad
                    + "          key: password",
                ),
                ("CONFIG_PATH", "value: /etc/app/config.yaml"),
                ("GOMAXPROCS", 'value: "2"'),
            ],
            3,
        )
    )
    return (
        f"{pad}serviceAccountName: {chart}\n"
        f"{pad}securityContext:\n{pad}  runAsNonRoot: true\n{pad}  fsGroup: 2000\n"
        f"{pad}  seccompProfile:\n{pad}    type: RuntimeDefault\n"
        f"{pad}containers:\n"
        f"{pad}  - name: {component}\n"
        f'{pad}    image: "registry.example.org/{chart}/{component}:2.7.1"\n'
        f"{pad}    imagePullPolicy: IfNotPresent\n"
        f'{pad}    args: ["--config=/etc/app/config.yaml", "--port={port}"]\n'
        f"{pad}    ports:\n{pad}    - name: http\n{pad}      containerPort: {port}\n{pad}      protocol: TCP\n"
        f"{pad}    env:\n{env}"
        f"{pad}    livenessProbe:\n{pad}      httpGet:\n{pad}        path: /healthz\n{pad}        port: http\n"
        f"{pad}      initialDelaySeconds: 10\n{pad}      periodSeconds: 10\n"
        f"{pad}    readinessProbe:\n{pad}      httpGet:\n{pad}        path: /readyz\n{pad}        port: http\n"
        f"{pad}    resources:\n{pad}      limits:\n{pad}        cpu: 500m\n{pad}        memory: 512Mi\n"
        f"{pad}      requests:\n{pad}        cpu: 100m\n{pad}        memory: 128Mi\n"
        f"{pad}    securityContext:\n{pad}      allowPrivilegeEscalation: false\n"
        f"{pad}      readOnlyRootFilesystem: true\n{pad}      capabilities:\n{pad}        drop:\n{pad}        - ALL\n"
        f"{pad}    volumeMounts:\n{pad}    - name: config\n{pad}      mountPath: /etc/app\n"
        f"{pad}    - name: tmp\n{pad}      mountPath: /tmp\n"
        f"{pad}affinity:\n{pad}  podAntiAffinity:\n{pad}    preferredDuringSchedulingIgnoredDuringExecution:\n"
        f"{pad}    - weight: 100\n{pad}      podAffinityTerm:\n{pad}        labelSelector:\n"
        f"{pad}          matchLabels:\n{pad}            app.kubernetes.io/name: {chart}\n"
        f"{pad}        topologyKey: kubernetes.io/hostname\n"
        f"{pad}nodeSelector:\n{pad}  kubernetes.io/os: linux\n"
        f"{pad}tolerations:\n{pad}- key: dedicated\n{pad}  operator: Equal\n{pad}  value: {chart}\n"
        f"{pad}  effect: NoSchedule\n"
        f"{pad}volumes:\n{pad}- name: config\n{pad}  configMap:\n{pad}    name: {chart}-config\n"
        f"{pad}- name: tmp\n{pad}  emptyDir: {{}}\n"
    )


def _template(rng: random.Random, chart: str, component: str, indent: int) -> str:
    pad = " " * indent
    return (
        f"{pad}metadata:\n{pad}  labels:\n{_labels(chart, component, indent + 4)}"
        f"{pad}  annotations:\n{pad}    checksum/config: {rng.getrandbits(128):032x}\n"
        f'{pad}    prometheus.io/scrape: "true"\n'
        f"{pad}spec:\n{_pod_spec(rng, chart, component, indent + 2)}"
    )


def _workload(kind: str, api: str, kind_file: str) -> Callable[[random.Random, str, str, str], str]:
    def render(rng: random.Random, chart: str, component: str, namespace: str) -> str:
        selector = f"  selector:\n    matchLabels:\n      app.kubernetes.io/name: {chart}\n"
        if kind == "CronJob":
            spec = (
                '  schedule: "*/15 * * * *"\n  concurrencyPolicy: Forbid\n  jobTemplate:\n    spec:\n'
                "      backoffLimit: 2\n      template:\n" + _template(rng, chart, component, 8)
            )
        elif kind == "Job":
            spec = "  backoffLimit: 3\n  template:\n" + _template(rng, chart, component, 4)
        elif kind == "DaemonSet":
            spec = selector + "  template:\n" + _template(rng, chart, component, 4)
        else:
            extra = f"  serviceName: {chart}-headless\n" if kind == "StatefulSet" else ""
            spec = f"  replicas: {rng.randint(1, 5)}\n{extra}" + selector + "  template:\n"
            spec += _template(rng, chart, component, 4)
        return f"{_head(api, kind, chart, component, kind_file, namespace)}spec:\n{spec}"

    return render


def _simple(kind: str, api: str, kind_file: str, body: str) -> Callable[[random.Random, str, str, str], str]:
    def render(rng: random.Random, chart: str, component: str, namespace: str) -> str:
        filled = body.format(chart=chart, component=component, n=rng.randint(1, 9), port=rng.choice([80, 443, 8080]))
        return _head(api, kind, chart, component, kind_file, namespace) + filled

    return render


_CONFIGMAP = """\
data:
  config.yaml: |
    server:
      port: {port}
      basePath: /api/v{n}
    log:
      level: info   # debug in staging
      format: json
    upstreams:
      - url: http://{chart}-backend:8080/
      - url: http://{chart}-cache:6379
  entrypoint.sh: |
    #!/bin/sh
    set -eu
    echo "starting {chart} on port {port}"
    exec /usr/local/bin/{component} --config=/etc/app/config.yaml "$@"
"""

_RENDERERS: list[Callable[[random.Random, str, str, str], str]] = [
    _workload("Deployment", "apps/v1", "deployment"),
    _workload("Deployment", "apps/v1", "deployment"),
    _workload("StatefulSet", "apps/v1", "statefulset"),
    _workload("DaemonSet", "apps/v1", "daemonset"),
    _workload("Job", "batch/v1", "job"),
    _workload("CronJob", "batch/v1", "cronjob"),
    _simple("ConfigMap", "v1", "configmap", _CONFIGMAP),
    _simple("ConfigMap", "v1", "configmap", _CONFIGMAP),
    _simple("Secret", "v1", "secret", 'type: Opaque\ndata:\n  password: "c2VjcmV0LXtufQ=="\n'),
    _simple(
        "Service",
        "v1",
        "service",
        "spec:\n  type: ClusterIP\n  ports:\n    - port: {port}\n      targetPort: http\n      protocol: TCP\n"
        "      name: http\n  selector:\n    app.kubernetes.io/name: {chart}\n"
        "    app.kubernetes.io/instance: {chart}-prod\n",
    ),
    _simple(
        "Service",
        "v1",
        "service",
        "spec:\n  clusterIP: None\n  ports:\n    - port: {port}\n      name: peer\n  selector:\n"
        "    app.kubernetes.io/name: {chart}\n",
    ),
    _simple("ServiceAccount", "v1", "serviceaccount", "automountServiceAccountToken: false\n"),
    _simple(
        "Role",
        "rbac.authorization.k8s.io/v1",
        "role",
        'rules:\n  - apiGroups: [""]\n    resources: ["configmaps", "secrets"]\n    verbs: ["get", "list", "watch"]\n'
        '  - apiGroups: ["coordination.k8s.io"]\n    resources: ["leases"]\n    verbs: ["get", "create", "update"]\n',
    ),
    _simple(
        "RoleBinding",
        "rbac.authorization.k8s.io/v1",
        "rolebinding",
        "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {chart}-{component}\n"
        "subjects:\n  - kind: ServiceAccount\n    name: {chart}\n",
    ),
    _simple(
        "Ingress",
        "networking.k8s.io/v1",
        "ingress",
        "  annotations:\n    nginx.ingress.kubernetes.io/proxy-body-size: 64m\n"
        "    cert-manager.io/cluster-issuer: letsencrypt\n"
        "spec:\n  ingressClassName: nginx\n  tls:\n    - hosts:\n        - {chart}.example.org\n"
        "      secretName: {chart}-tls\n  rules:\n    - host: {chart}.example.org\n      http:\n        paths:\n"
        "          - path: /\n            pathType: Prefix\n            backend:\n              service:\n"
        "                name: {chart}-{component}\n                port:\n                  number: {port}\n",
    ),
    _simple(
        "HorizontalPodAutoscaler",
        "autoscaling/v2",
        "hpa",
        "spec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {chart}-{component}\n"
        "  minReplicas: 2\n  maxReplicas: {n}0\n  metrics:\n    - type: Resource\n      resource:\n        name: cpu\n"
        "        target:\n          type: Utilization\n          averageUtilization: 75\n",
    ),
    _simple(
        "PodDisruptionBudget",
        "policy/v1",
        "pdb",
        "spec:\n  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {chart}\n",
    ),
    _simple(
        "NetworkPolicy",
        "networking.k8s.io/v1",
        "networkpolicy",
        "spec:\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: {chart}\n  policyTypes: [Ingress]\n"
        "  ingress:\n    - from:\n        - namespaceSelector:\n            matchLabels:\n"
        "              kubernetes.io/metadata.name: ingress-nginx\n      ports:\n        - port: {port}\n",
    ),
]


# ---------------------------------------------------------------------------------------------
# CustomResourceDefinitions with real schemas


@functools.cache
def _definitions() -> dict[str, Any]:
    import kubernetes_validate  # the schemas ship with it

    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.34.0-local"
    defs: dict[str, Any] = json.loads((base / "_definitions.json").read_text())["$defs"]
    return defs


def _expand(schema: Any, depth: int) -> Any:
    """Inline `$ref`s down to `depth`, in the shape of a CRD's openAPIV3Schema."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            if depth <= 0:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return _expand(_definitions()[schema["$ref"].rsplit("/", 1)[-1]], depth - 1)
        out = {}
        for key, value in schema.items():
            if key.startswith("x-kubernetes-group") or key in ("format", "$schema"):
                continue
            if key == "type" and isinstance(value, list):
                value = next(t for t in value if t != "null")
            out[key] = _expand(value, depth)
        return out
    if isinstance(schema, list):
        return [_expand(item, depth) for item in schema]
    return schema


@functools.cache
def _crd_schema() -> Any:
    pod_template = _expand({"$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"}, 2)
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"replicas": {"type": "integer"}, "template": pod_template},
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def crd(rng: random.Random, index: int) -> str:
    group = f"{rng.choice(['apps', 'data', 'ml', 'ops'])}{index}.example.org"
    kind = rng.choice(["Pipeline", "Cluster", "Backup", "Gateway"]) + str(index)
    doc = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{kind.lower()}s.{group}",
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.16.5"},
        },
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": f"{kind.lower()}s", "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": _crd_schema()}},
            ],
        },
    }
    body = yaml.dump(doc, Dumper=_CrdDumper, sort_keys=False, width=1 << 16)
    return f"---\n# Source: crds/{kind.lower()}.yaml\n{body}"


class _CrdDumper(yaml.SafeDumper):
    """Long and multi-line descriptions as `|-` blocks, as controller-gen writes them."""


def _description_style(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if len(value) > 80 else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CrdDumper.add_representer(str, _description_style)


# ---------------------------------------------------------------------------------------------


def document(rng: random.Random, index: int, gpu_share: float) -> str:
    roll = rng.random()
    if roll < gpu_share:
        return rng.choice(gpu_documents())
    if roll < gpu_share + 0.02:
        return rng.choice(dra_documents())
    if roll < gpu_share + 0.03:
        return crd(rng, index)
    chart = f"app{index // 40}"
    component = rng.choice(["api", "worker", "web", "cache", "db"])
    namespace = f"team-{index % 17}"
    return rng.choice(_RENDERERS)(rng, chart, component, namespace)


def build_tree(root: Path, documents: int, gpu_share: float = 0.10, seed: int = 7) -> int:
    """Write the tree; returns the number of files."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    files = 0
    written = 0
    while written < documents:
        count = min(documents - written, rng.randint(1, 2 * DOCS_PER_FILE - 1))
        batch = [document(rng, written + i, gpu_share) for i in range(count)]
        directory = root / f"cluster-{files % 7}" / f"app{files // 10:04d}"
        directory.mkdir(parents=True, exist_ok=True)
        body = "".join(d if d.startswith("---") else "---\n" + d for d in batch)
        (directory / f"rendered-{files:05d}.yaml").write_text(body, encoding="utf-8")
        files += 1
        written += count
    return files


GPU_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer-{i}
  namespace: ml-{ns}
  labels:
    app: trainer-{i}   # one per experiment
spec:
  replicas: 1
  selector:
    matchLabels:
      app: trainer-{i}
  template:
    metadata:
      labels:
        app: trainer-{i}
    spec:
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:24.05-py3
        command: ["python", "train.py", "--epochs", "{epochs}"]
        resources:
          limits:
            nvidia.com/gpu: {gpus}
            memory: 64Gi
          requests:
            cpu: "8"
            memory: 64Gi
        volumeMounts:
        - name: data
          mountPath: /data
      volumes:
      - name: data
        persistentVolumeClaim:
          claimName: datasets
"""


def gpu_file(path: Path, documents: int, seed: int = 3) -> None:
    """One YAML stream of GPU Deployments (every document is edited)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(documents):
            out.write(
                "---\n" + GPU_DEPLOYMENT.format(i=i, ns=i % 13, epochs=rng.randint(1, 90), gpus=rng.randint(1, 8))
            )
