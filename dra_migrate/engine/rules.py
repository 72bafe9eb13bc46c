"""Every finding rule, declared once: the `rule` column of `--report json` is a contract.

Each rule has one severity and one meaning; `Finding` refuses an undeclared rule or a severity
that differs from its declaration, so a rule id cannot drift or be reused for something else.
The documentation's rule reference is generated from this one (`rules_table`, through tools/docsgen.py).
"""

from __future__ import annotations

from dra_migrate.engine.severity import Severity

INFO, WARN, ERROR = Severity.INFO, Severity.WARNING, Severity.ERROR


class Rule:
    __slots__ = ("id", "meaning", "severity")

    def __init__(self, id: str, severity: Severity, meaning: str) -> None:
        self.id = id
        self.severity = severity
        self.meaning = meaning


RULES: tuple[Rule, ...] = (
    # Device-plugin requests in pod specs
    Rule("device-plugin-to-claim", INFO, "a device-plugin request became a claim"),
    Rule("migration-path", INFO, "which path a resource took (claim or KEP-5004 extended resource) and why"),
    Rule("extended-resource-unserved", WARN, "kept for KEP-5004, but the target or the known classes cannot serve it"),
    Rule("extended-resource-dra", INFO, "a deviceclass.resource.kubernetes.io/ name is already served by DRA"),
    Rule("unmapped-resource", WARN, "an extended resource with no mapping stays a device-plugin request"),
    Rule("unconvertible-resource", WARN, "a mapped name with no device-count equivalent is kept"),
    Rule("shared-device", ERROR, "the cluster shares the devices behind a name (time-slicing, MPS): kept"),
    Rule("resource-kept-with-companion", WARN, "kept because the container also requests a qualifying share"),
    Rule("pod-kept-on-device-plugin", WARN, "kept so that one pod does not use a DeviceClass both ways"),
    Rule("invalid-device-count", ERROR, "a count that is not a whole, non-negative number of devices"),
    Rule("requests-limits-differ", ERROR, "requests and limits of an extended resource differ"),
    Rule("too-many-devices", ERROR, "more devices than one ResourceClaim may allocate"),
    Rule("template-placeholder", WARN, "an unrendered template placeholder where a count belongs"),
    Rule("init-container-sees-more", WARN, "an init container shares claims holding more devices than it asked for"),
    Rule("dra-gate-off", WARN, "the target has DynamicResourceAllocation off by default"),
    Rule("argo-resource-claims", WARN, "an Argo template now uses resourceClaims (Argo Workflows 4.1+)"),
    Rule("serverless-claims", ERROR, "Knative Serving runs the workload and refuses claims; left as is"),
    Rule("serverless-mode-unknown", WARN, "an InferenceService names no deployment mode (Serverless refuses claims)"),
    Rule("unsupported-kind", WARN, "device requests in a kind whose pods cannot be given claims"),
    Rule("hami-selector", INFO, "a HAMi device-selection annotation became a CEL selector"),
    Rule("hami-policy", WARN, "a HAMi scheduling policy annotation has no DRA equivalent"),
    Rule("custom-scheduler", WARN, "a converted pod names another scheduler, which must allocate claims"),
    Rule("limit-range-device", WARN, "a LimitRange names a converted resource (its default re-adds it)"),
    Rule("quota-scoped", WARN, "a scoped quota on a converted name: claims are charged to unscoped quotas only"),
    Rule("quota-device-class", INFO, "a ResourceQuota device-class entry added beside a device-plugin one"),
    Rule("quota-kept", INFO, "a ResourceQuota entry that keeps limiting claims through KEP-5004"),
    Rule("quota-not-expressible", WARN, "a GPU quota that per-class device quotas cannot express exactly"),
    Rule("unknown-kind", WARN, "a kind with no known pod specs names a mapped resource; add it under workloads:"),
    Rule("ray-start-params", INFO, "rayStartParams set from the Ray container's old limits, as KubeRay derived them"),
    Rule("trainer-processes", INFO, "a Trainer runtime's processes per node from GPU limits that are now claims"),
    Rule("cluster-runtime-templates", WARN, "a cluster-scoped runtime needs its templates in each TrainJob namespace"),
    # Node selection and legacy pod fields
    Rule("node-name-to-selector", INFO, "spec.nodeName became node selection so the scheduler allocates claims"),
    Rule("node-name-conflict", ERROR, "nodeName conflicts with the pod's own node selection; kept"),
    Rule("legacy-claim-source", INFO, "a pre-1.31 resourceClaims[].source was flattened"),
    Rule("legacy-claim-source-invalid", ERROR, "a pre-1.31 resourceClaims[].source that names neither or both"),
    # Invalid constructs seen in the wild
    Rule("invalid-inline-claim-template", ERROR, "resourceClaimTemplates inlined in a pod spec"),
    Rule("invalid-pod-claim-field", ERROR, "an unknown field in a pod's resourceClaims entry"),
    Rule("invalid-claim-field-ref", ERROR, "resourceFieldRef to claims, which does not exist"),
    Rule("unknown-container-claim", ERROR, "a container claim not declared in spec.resourceClaims"),
    Rule("invalid-claim-allocation-mode", ERROR, "claim-level allocationMode, which structured DRA does not have"),
    Rule("invalid-resource-class-name", ERROR, "resourceClassName in a structured-parameters claim"),
    Rule("invalid-constraint-attributes", ERROR, "constraints[].attributes instead of matchAttribute"),
    Rule("flat-request-in-v1", ERROR, "v1beta1 request fields outside exactly: in v1beta2/v1"),
    Rule("exactly-or-first-available", ERROR, "a v1beta2/v1 request without exactly one of exactly and firstAvailable"),
    Rule("exactly-before-v1beta2", ERROR, "an exactly: wrapper in v1alpha3/v1beta1"),
    Rule("exactly-and-first-available", ERROR, "a v1beta1 request with device fields and firstAvailable both set"),
    # resource.k8s.io objects between versions
    Rule("api-version", INFO, "an object moved to the version the target serves"),
    Rule("class-to-device-request", INFO, "a v1alpha2 resourceClassName became a device request"),
    Rule("driver-name-to-selector", WARN, "a ResourceClass driverName became a CEL selector"),
    Rule("classic-dra", ERROR, "classic DRA (parametersRef, controller) with no automatic equivalent"),
    Rule("claim-spec-missing", ERROR, "a claim or claim template without a spec"),
    Rule("resource-class-without-driver", ERROR, "a ResourceClass without driverName"),
    Rule("resource-class-name-missing", ERROR, "a v1alpha2 claim without resourceClassName"),
    Rule("slice-not-named-resources", ERROR, "a v1alpha2 ResourceSlice without namedResources"),
    Rule("structured-parameters-1.30", ERROR, "1.30 ResourceClaimParameters/ResourceClassParameters to fold by hand"),
    Rule("immediate-allocation-dropped", WARN, "allocationMode Immediate has no equivalent"),
    Rule("suitable-nodes-dropped", WARN, "suitableNodes dropped"),
    Rule("quantity-attribute-to-capacity", WARN, "a quantity attribute became capacity"),
    Rule("slice-attribute-dropped", WARN, "a list attribute the target cannot hold was dropped"),
    Rule("runtime-object-dropped", WARN, "a scheduler-written classic DRA object was dropped"),
    Rule("resource-slice", WARN, "a ResourceSlice was converted, though its driver republishes it"),
    Rule("field-not-in-target", ERROR, "a field the target release's API does not have; left as is"),
    Rule("unset-field-dropped", INFO, "a field set to an empty value that the target's API does not have was dropped"),
    Rule("feature-gate-off", WARN, "a field behind a feature gate that is off by default in the target"),
    Rule("admin-access", WARN, "adminAccess needs the namespace label"),
    Rule("api-off-by-default", WARN, "an API version the target serves only when enabled"),
    Rule("not-served", ERROR, "an API version the target does not serve; left as is"),
    # Whole-run and file-level checks of the translator
    Rule("extended-resource-class-conflict", WARN, "more than one DeviceClass maps one extended resource name"),
    Rule("target-not-released", WARN, "the target is newer than the release table: treated as its newest release"),
    Rule("schema-fallback", WARN, "--validate checks a target without its own schema against the newest one"),
    Rule("schema", ERROR, "the conversion made an object the target release would reject (schema, names, CEL)"),
    Rule("schema-input", ERROR, "an output object the target would reject, as its input already was"),
    Rule("comment-lost", WARN, "a comment line the fallback editor could not keep (anchors, merge keys, tags)"),
    Rule("resource-toleration", INFO, "the toleration ExtendedResourceToleration gave for the resource was added"),
    Rule("helm-chart", WARN, "a Helm chart requests mapped devices: convert what it renders with the post-renderer"),
    Rule("status-dropped", WARN, "a converted object's non-empty status was dropped (the server owns it)"),
    Rule("template-conflict", ERROR, "a generated ResourceClaimTemplate's name is taken by another spec; kept"),
    Rule("template-reference", WARN, "a kustomization renames templates but not the references to them"),
    Rule("device-class-kept", WARN, "a generated DeviceClass's name is taken by another spec in its file; kept"),
    Rule("parse", ERROR, "a file that cannot be read, or parsed as YAML or JSON: left as it was"),
    Rule("no-manifests", WARN, "the directories named hold no YAML or JSON file to convert"),
    Rule("skipped", INFO, "a file that is not converted (a template, no Kubernetes objects, a link read twice)"),
    Rule("not-written", ERROR, "a file left unchanged because its unit could not be written whole"),
    Rule("render-mismatch", ERROR, "the render after the conversion is not the conversion of the render before"),
    Rule(
        "render-not-built",
        ERROR,
        "a kustomization root that renders from a changed file cannot be built to verify the conversion "
        "(no kustomize, helmCharts without helm, a KRM function without --enable-exec, a remote base)",
    ),
    Rule("render-not-verified", WARN, "a kustomization root was not rendered to check the conversion"),
    Rule("render-verified", INFO, "kustomize renders the conversion of what it rendered before"),
    Rule("json-patch-converted", INFO, "an overlay's JSON 6902 patch of device requests rewritten to claims"),
    Rule("patch-not-converted", ERROR, "an overlay's patch or replacement of device requests has no exact DRA form"),
)

BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def check_rule(rule: str, severity: Severity) -> None:
    """Refuse a finding whose rule is undeclared or declared with another severity."""
    declared = BY_ID.get(rule)
    if declared is None:
        raise ValueError(f"finding rule {rule!r} is not declared in dra_migrate/engine/rules.py")
    if declared.severity is not severity:
        raise ValueError(f"finding rule {rule!r} is declared as {declared.severity}, not {severity}")


def rules_table() -> str:
    """The Markdown table of every rule, for the documentation's rule reference."""
    rows = [f"| `{rule.id}` | {rule.severity} | {rule.meaning} |" for rule in RULES]
    return "\n".join(["| rule | severity | meaning |", "|---|---|---|", *rows]) + "\n"
