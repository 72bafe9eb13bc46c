#!/usr/bin/env bash
# Build (or locate) kueue-config-check, the program the Kueue tests run: Kueue's own configuration
# loading and validation (sigs.k8s.io/kueue pkg/config), built from the Go module in kueue-config-check/
# next to this script, whose go.mod pins the Kueue release and whose go.sum is complete (no `go mod tidy`).
# The binary goes to a per-release cache outside the checkout:
#   ${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/kueue-config-check-<kueue version>/kueue-config-check
# and is built again only when the module's files change (their hash is kept beside it).
# A kueue-config-check the user names with $KUEUE_CONFIG_CHECK is used instead of building one.
#
# Usage: build-kueue-config-check.sh     prints the path of the kueue-config-check binary
# Env:   DRA_MIGRATE_BUILD_JOBS (go build -p, default 2)
set -euo pipefail

MODULE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kueue-config-check"
# The hash of the module's files reads them in byte order, as the tests compute it (tests/common/kueue.py).
export LC_ALL=C

TOOL=build-kueue-config-check HELP_LINES=2,12 NAMED=KUEUE_CONFIG_CHECK
source "$(dirname "${BASH_SOURCE[0]}")/../common/gobuild.sh" "$@"

KUEUE_VERSION="$(awk '$1 == "sigs.k8s.io/kueue" { print $2 }' "$MODULE_DIR/go.mod")"
[[ "$KUEUE_VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "no sigs.k8s.io/kueue version in $MODULE_DIR/go.mod"
BIN_DIR="$CACHE_ROOT/kueue-config-check-$KUEUE_VERSION"
BIN="$BIN_DIR/kueue-config-check"
source_hash="$(cd "$MODULE_DIR" && cat go.mod go.sum ./*.go | sha256sum | cut -d' ' -f1)"

if [[ -x "$BIN" && "$(cat "$BIN_DIR/source.sha256" 2>/dev/null)" == "$source_hash" ]]; then
  printf '%s\n' "$BIN"
  exit 0
fi

command -v go >/dev/null || die "go is not installed (needed to build sigs.k8s.io/kueue@$KUEUE_VERSION pkg/config)"
log "building $MODULE_DIR (sigs.k8s.io/kueue $KUEUE_VERSION) into $BIN_DIR"
mkdir -p "$BIN_DIR"
start=$SECONDS
# Built beside the binary, then renamed over it: a test never runs a half-written file.
(cd "$MODULE_DIR" && nice go build -p "$JOBS" -mod=readonly -trimpath -ldflags "-s -w" -o "$BIN.partial" .)
mv "$BIN.partial" "$BIN"
printf '%s\n' "$source_hash" > "$BIN_DIR/source.sha256"
log "built in $((SECONDS - start)) s"
printf '%s\n' "$BIN"
