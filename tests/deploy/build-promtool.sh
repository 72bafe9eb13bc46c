#!/usr/bin/env bash
# Build (or locate) the promtool binary the monitoring tests run, from the Go module proxy.
#
# promtool is a command of the Prometheus Go module, which has no replace directives, so
# `go install` builds it. The module's versions are v0.3MM.P for Prometheus 3.MM.P: Prometheus
# 3.16.0 is github.com/prometheus/prometheus v0.316.0. It is built with Prometheus' own build tag
# remove_all_sd (its README, "Service discovery plugins"): without the cloud service discoveries,
# which rule and metric checks never use, the build compiles a fraction of the code. The binary
# goes to a per-version cache outside the checkout:
#   ${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/promtool-<version>/promtool
# A promtool the user names with $PROMTOOL is used instead of building one.
#
# Usage: build-promtool.sh        prints the path of the promtool binary
# Env:   DRA_MIGRATE_PROMTOOL_VERSION (module version, default below), DRA_MIGRATE_BUILD_JOBS (go build -p, default 2)
set -euo pipefail

PROMTOOL_VERSION="${DRA_MIGRATE_PROMTOOL_VERSION:-v0.316.0}"
MODULE="github.com/prometheus/prometheus"
TOOL=build-promtool HELP_LINES=2,15 NAMED=PROMTOOL
source "$(dirname "${BASH_SOURCE[0]}")/../common/gobuild.sh" "$@"
BIN_DIR="$CACHE_ROOT/promtool-$PROMTOOL_VERSION"

if [[ -x "$BIN_DIR/promtool" ]]; then
  printf '%s\n' "$BIN_DIR/promtool"
  exit 0
fi

[[ "$PROMTOOL_VERSION" =~ ^v0\.3([0-9][0-9])\.([0-9]+)$ ]] \
  || die "DRA_MIGRATE_PROMTOOL_VERSION=$PROMTOOL_VERSION is not a Prometheus 3 module version (v0.3MM.P)"
# The release it is, as Prometheus' own build stamps it (.promu.yml: common/version.Version).
release="3.$((10#${BASH_REMATCH[1]})).${BASH_REMATCH[2]}"

command -v go >/dev/null || die "go is not installed (needed to build $MODULE/cmd/promtool@$PROMTOOL_VERSION)"
log "building $MODULE/cmd/promtool@$PROMTOOL_VERSION (Prometheus $release) into $BIN_DIR"
mkdir -p "$BIN_DIR"
start=$SECONDS
(cd /tmp && GOBIN="$BIN_DIR.partial" go install -p "$JOBS" -trimpath -tags remove_all_sd \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
  "$MODULE/cmd/promtool@$PROMTOOL_VERSION")
mv "$BIN_DIR.partial/promtool" "$BIN_DIR/promtool"
rmdir "$BIN_DIR.partial"
log "built in $((SECONDS - start)) s: $("$BIN_DIR/promtool" --version 2>&1 | head -1)"
printf '%s\n' "$BIN_DIR/promtool"
