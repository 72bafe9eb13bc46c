"""Kubernetes manifests as text and files, below every part that reads or writes them (translator,
cluster snapshots, plans): YAML that keeps its comments and layout (yamltext), the OpenAPI schema
check of generated objects (schema), and atomic file writes (atomicwrite). Imports only the engine.
"""
