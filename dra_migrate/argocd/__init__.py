"""Argo CD config management plugin: `dra-migrate argocd-cmp init|generate`, run by the plugin's
sidecar in the application's source directory (deploy/argocd-cmp/plugin.yaml).

`generate` renders the source as Argo CD would (kustomize build, helm template, or the plain
manifests) and hands the render to `dra-migrate convert`; its stdout is what Argo CD syncs.
"""
