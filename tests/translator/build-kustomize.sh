#!/usr/bin/env bash
# Build the standalone kustomize the KRM function test runs (tests/translator/test_krm.py):
# `kubectl kustomize` has no --enable-exec, so exec KRM functions need kustomize itself.
# Same release as kubectl 1.34 bundles; from the Go module proxy into a cache outside the checkout:
# ${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/kustomize-v5.7.1/kustomize
set -euo pipefail
VERSION="v5.7.1"
DEST="${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/kustomize-$VERSION"
if [[ -x "$DEST/kustomize" ]]; then
  echo "[build-kustomize] using $DEST/kustomize" >&2
  exit 0
fi
export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
mkdir -p "$DEST"
GOBIN="$DEST" go install "sigs.k8s.io/kustomize/kustomize/v5@$VERSION"
echo "[build-kustomize] built $DEST/kustomize" >&2
