"""The translator's second stage: kustomizations, the repository graph of their roots, real kustomize
renders, and the verification that a converted tree renders the conversion. Imports only reading."""
