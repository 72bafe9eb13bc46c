"""The translator's third stage: one file through the engine (pipeline), its --validate checks, the
templates it emits and where they go, and the converted patches of kustomize overlays. Imports only
reading and renders."""
