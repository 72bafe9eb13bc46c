#!/usr/bin/env bash
# Build (or locate) the helm binary the chart tests run, from the Go module proxy.
#
# helm is a plain Go module (no replace directives), so `go install` builds it;
# the binary goes to a per-version cache outside the checkout:
#   ${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/helm-<version>/helm
# A helm the user names with $HELM is used instead of building one.
#
# Usage: build-helm.sh            prints the path of the helm binary
# Env:   DRA_MIGRATE_HELM_VERSION (default below), DRA_MIGRATE_BUILD_JOBS (go build -p, default 2)
set -euo pipefail

HELM_VERSION="${DRA_MIGRATE_HELM_VERSION:-v4.3.1}"
HELM_MODULE="helm.sh/helm/${HELM_VERSION%%.*}"
TOOL=build-helm HELP_LINES=2,11 NAMED=HELM
source "$(dirname "${BASH_SOURCE[0]}")/../common/gobuild.sh" "$@"
BIN_DIR="$CACHE_ROOT/helm-$HELM_VERSION"

if [[ -x "$BIN_DIR/helm" ]]; then
  printf '%s\n' "$BIN_DIR/helm"
  exit 0
fi

command -v go >/dev/null || die "go is not installed (needed to build $HELM_MODULE@$HELM_VERSION)"
log "building $HELM_MODULE/cmd/helm@$HELM_VERSION into $BIN_DIR"
mkdir -p "$BIN_DIR"
start=$SECONDS
# The version stamp is what helm's own release build sets (its Makefile's LDFLAGS).
(cd /tmp && GOBIN="$BIN_DIR.partial" go install -p "$JOBS" -trimpath \
  -ldflags "-s -w -X $HELM_MODULE/internal/version.version=$HELM_VERSION -X $HELM_MODULE/internal/version.gitTreeState=clean" \
  "$HELM_MODULE/cmd/helm@$HELM_VERSION")
mv "$BIN_DIR.partial/helm" "$BIN_DIR/helm"
rmdir "$BIN_DIR.partial"
log "built in $((SECONDS - start)) s: $("$BIN_DIR/helm" version --short)"
printf '%s\n' "$BIN_DIR/helm"
