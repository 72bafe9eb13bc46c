# The part every script that builds a Go tool for the tests shares (tests/deploy/build-helm.sh,
# tests/deploy/build-promtool.sh, tests/planning/build-kueue-config-check.sh): sourced after
# `set -euo pipefail` with the script's arguments, and with TOOL (the log prefix), HELP_LINES (the
# lines of the script's header that `--help` prints, as sed reads them) and NAMED (the environment
# variable through which a user names a binary to use instead of building one) set. It sets
# CACHE_ROOT and JOBS, the Go build settings, log and die; answers --help; and, when the user named a
# binary, prints its path and ends the script.

CACHE_ROOT="${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}"
JOBS="${DRA_MIGRATE_BUILD_JOBS:-2}"

# Same settings as the control-plane build: no cgo, no workspace, no toolchain download.
export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

log() { printf '[%s] %s\n' "$TOOL" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

case "${1:-}" in
  -h|--help) sed -n "${HELP_LINES}p" "${BASH_SOURCE[1]}"; exit 0 ;;
  "") ;;
  *) die "unknown argument: $1" ;;
esac

if [[ -n "${!NAMED:-}" ]]; then
  [[ -f "${!NAMED}" && -x "${!NAMED}" ]] || die "$NAMED=${!NAMED} is not an executable file"
  printf '%s\n' "${!NAMED}"
  exit 0
fi
