#!/usr/bin/env bash
# Build (or locate) the Kubernetes control-plane binaries the e2e tests run:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl.
#
# Versions are pinned by the wrapper modules next to this script
# (k8sbins/go.mod, etcdbin/go.mod). Binaries go to a per-version cache outside
# the checkout: ${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/k8s-vX.Y.Z/ and
# etcd-vX.Y.Z/. A binary the user already has (TEST_ASSET_<NAME>, then
# $KUBEBUILDER_ASSETS/<name>) is used instead of building it.
#
# Usage: build-control-plane.sh [--refresh] [--env-file PATH]
#   --refresh        re-pin the wrappers to the newest 1.34 / 3.6 patch on the
#                    module proxy (rewrites go.mod and go.sum), then build.
#   --env-file PATH  where to write the TEST_ASSET_* exports
#                    (default: $CACHE_ROOT/control-plane.env).
# Env: DRA_MIGRATE_BUILD_JOBS (go build -p, default 2).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}"
K8S_MOD="$HERE/k8sbins"
ETCD_MOD="$HERE/etcdbin"
JOBS="${DRA_MIGRATE_BUILD_JOBS:-2}"
K8S_MINOR="1.34"
ETCD_MINOR="3.6"
K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
REFRESH=0
ENV_FILE=""

# Reproducible, offline-friendly Go settings: no cgo, no workspace, no
# toolchain download, no VCS stamping.
export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

parse_args() {
  while (($#)); do
    case "$1" in
      --refresh) REFRESH=1 ;;
      --env-file) shift; ENV_FILE="${1:?--env-file needs a path}" ;;
      -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}"; exit 0 ;;
      *) die "unknown argument: $1" ;;
    esac
    shift
  done
  ENV_FILE="${ENV_FILE:-$CACHE_ROOT/control-plane.env}"
}

# kube-apiserver -> TEST_ASSET_KUBE_APISERVER (envtest's naming).
asset_var() { local n="${1^^}"; printf 'TEST_ASSET_%s' "${n//-/_}"; }

# Prints the path of a binary the user supplied, or nothing.
user_binary() {
  local name="$1" var
  var="$(asset_var "$name")"
  if [[ -n "${!var:-}" ]]; then
    if [[ -f "${!var}" && -x "${!var}" ]]; then printf '%s' "${!var}"; return; fi
    log "warning: $var=${!var} is not an executable file; ignoring it"
  fi
  if [[ -n "${KUBEBUILDER_ASSETS:-}" && -f "$KUBEBUILDER_ASSETS/$name" && -x "$KUBEBUILDER_ASSETS/$name" ]]; then
    printf '%s' "$KUBEBUILDER_ASSETS/$name"
  fi
}

pinned_version() { # <go.mod> <module path>
  [[ -f "$1" ]] || return 0
  awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' "$1"
}

newest_patch() { # <module> <minor, e.g. 1.34>
  local re="^v${2//./\\.}\\.[0-9]+$"
  (cd /tmp && go list -m -versions "$1") | tr ' ' '\n' | grep -E "$re" | sort -V | tail -n1
}

write_k8s_wrapper() { # <version, e.g. v1.34.4>
  local version="$1" staging_version="v0.${1#v1.}" gomod
  gomod="$(cd /tmp && go mod download -json "k8s.io/kubernetes@$version" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "$gomod" ]] || die "cannot download k8s.io/kubernetes@$version"
  # k8s.io/kubernetes pins every staging module at v0.0.0 and replaces it with
  # ./staging/...; a consumer must replace each one with its published tag.
  local -a staging
  mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\1#p' "$gomod")
  ((${#staging[@]})) || die "no staging modules found in $gomod"
  {
    printf '// Wrapper module that pins the Kubernetes binaries built for tests/e2e.\n'
    printf '// Regenerate with: tests/e2e/build-control-plane.sh --refresh\n'
    printf 'module dra-migrate/tests/e2e/k8sbins\n\ngo 1.24.0\n\n'
    printf '// Only the main module'"'"'s godebug applies; upstream 1.34 uses this.\n'
    printf 'godebug default=go1.24\n\n'
    printf 'require k8s.io/kubernetes %s\n\ntool (\n' "$version"
    printf '\tk8s.io/kubernetes/cmd/%s\n' "${K8S_BINS[@]}"
    printf ')\n\nreplace (\n'
    printf '\t%s => %s '"$staging_version"'\n' $(for m in "${staging[@]}"; do echo "$m $m"; done)
    printf ')\n'
  } >"$K8S_MOD/go.mod"
  rm -f "$K8S_MOD/go.sum"
  (cd "$K8S_MOD" && go mod tidy)
}

write_etcd_wrapper() { # <version, e.g. v3.6.16>
  {
    printf '// Wrapper module that pins the etcd server built for tests/e2e.\n'
    printf '// Regenerate with: tests/e2e/build-control-plane.sh --refresh\n'
    printf 'module dra-migrate/tests/e2e/etcdbin\n\ngo 1.24.0\n\n'
    printf 'require go.etcd.io/etcd/server/v3 %s\n\ntool go.etcd.io/etcd/server/v3\n' "$1"
  } >"$ETCD_MOD/go.mod"
  rm -f "$ETCD_MOD/go.sum"
  (cd "$ETCD_MOD" && go mod tidy)
}

refresh_wrappers() {
  local k8s etcd
  k8s="$(newest_patch k8s.io/kubernetes "$K8S_MINOR")"
  etcd="$(newest_patch go.etcd.io/etcd/server/v3 "$ETCD_MINOR")"
  [[ -n "$k8s" && -n "$etcd" ]] || die "could not resolve newest versions from the module proxy"
  log "pinning k8s.io/kubernetes $k8s, etcd $etcd"
  write_k8s_wrapper "$k8s"
  write_etcd_wrapper "$etcd"
}

k8s_ldflags() { # <version>
  local v="$1" minor flags="-s -w" p
  minor="${v#v1.}"; minor="${minor%%.*}"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    flags+=" -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  printf '%s' "$flags"
}

# Builds into a scratch dir next to the cache, then moves binaries into place,
# so an interrupted build never leaves a half-written binary that looks valid.
go_build_into() { # <module dir> <dest dir> <out name or ""> <ldflags> <pkg>...
  local mod="$1" dest="$2" out="$3" ldflags="$4"; shift 4
  local tmp
  mkdir -p "$dest"
  tmp="$(mktemp -d "$dest/.build.XXXXXX")"
  (cd "$mod" && go build -p "$JOBS" -trimpath -tags selinux,notest,grpcnotrace \
    -ldflags "$ldflags" -o "$tmp/$out" "$@")
  mv -f "$tmp"/* "$dest/"
  rmdir "$tmp"
}

declare -A RESOLVED=()
MISSING=()

# Fills RESOLVED[name] for every binary found and MISSING with the others.
resolve_all() { # <k8s dir> <etcd dir>
  local name found
  MISSING=()
  for name in etcd "${K8S_BINS[@]}"; do
    found="$(user_binary "$name")"
    if [[ -z "$found" ]]; then
      local dir="$1"; [[ "$name" == etcd ]] && dir="$2"
      [[ -x "$dir/$name" ]] && found="$dir/$name"
    fi
    if [[ -n "$found" ]]; then RESOLVED[$name]="$found"; else MISSING+=("$name"); fi
  done
}

write_env_file() {
  mkdir -p "$(dirname "$ENV_FILE")"
  local name
  {
    echo "# Written by tests/e2e/build-control-plane.sh; source it to reuse these binaries."
    for name in etcd "${K8S_BINS[@]}"; do
      printf 'export %s=%q\n' "$(asset_var "$name")" "${RESOLVED[$name]}"
    done
  } >"$ENV_FILE"
}

main() {
  parse_args "$@"
  command -v go >/dev/null || die "Go is required to build the control plane"
  if ((REFRESH)); then refresh_wrappers; fi
  local k8s_version etcd_version
  k8s_version="$(pinned_version "$K8S_MOD/go.mod" k8s.io/kubernetes)"
  etcd_version="$(pinned_version "$ETCD_MOD/go.mod" go.etcd.io/etcd/server/v3)"
  [[ -n "$k8s_version" && -n "$etcd_version" ]] || die "wrappers not pinned; run with --refresh"
  local k8s_dir="$CACHE_ROOT/k8s-$k8s_version" etcd_dir="$CACHE_ROOT/etcd-$etcd_version"

  local name k8s_pkgs=()
  resolve_all "$k8s_dir" "$etcd_dir"
  if ((${#MISSING[@]})); then
    log "building ${MISSING[*]} (k8s $k8s_version, etcd $etcd_version, -p $JOBS)"
    for name in "${MISSING[@]}"; do
      [[ "$name" == etcd ]] || k8s_pkgs+=("k8s.io/kubernetes/cmd/$name")
    done
    if [[ " ${MISSING[*]} " == *" etcd "* ]]; then
      go_build_into "$ETCD_MOD" "$etcd_dir" etcd "-s -w" go.etcd.io/etcd/server/v3
    fi
    if ((${#k8s_pkgs[@]})); then
      go_build_into "$K8S_MOD" "$k8s_dir" "" "$(k8s_ldflags "$k8s_version")" "${k8s_pkgs[@]}"
    fi
    resolve_all "$k8s_dir" "$etcd_dir"
    ((${#MISSING[@]} == 0)) || die "still missing after build: ${MISSING[*]}"
  fi
  write_env_file
  log "k8s $k8s_version, etcd $etcd_version ready in ${SECONDS}s"
  for name in etcd "${K8S_BINS[@]}"; do log "  $name: ${RESOLVED[$name]}"; done
  log "env file: $ENV_FILE"
  echo "$CACHE_ROOT"
}

main "$@"
