#!/usr/bin/env bash
# Build (or locate) the Kubernetes control-plane binaries the e2e tests run, for
# every supported release: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl.
#
# Versions are pinned by the wrapper modules next to this script: one per
# release (k8sbins/<minor>/go.mod) and one etcd for all (etcdbin/go.mod).
# Binaries go to a per-version cache outside the checkout:
# ${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}/k8s-vX.Y.Z/ and etcd-vX.Y.Z/.
# A binary the user already has (TEST_ASSET_<NAME>, then
# $KUBEBUILDER_ASSETS/<name>) is used instead of building it, for the release
# its --version names (etcd: for every release).
#
# Usage: build-control-plane.sh [--refresh] [--release MINOR[,MINOR...]]
#   --refresh   re-pin each selected wrapper to the newest patch of its release
#               (and etcd to the newest 3.6 patch) on the module proxy,
#               rewriting go.mod and go.sum, then build. With --release, a
#               release that has no wrapper yet gets one (how a release is added).
#   --release   only these releases, e.g. 1.37 or 1.34,1.37
#               (default: $DRA_MIGRATE_E2E_RELEASES, else every k8sbins/<minor>).
# Writes $CACHE_ROOT/control-plane-<minor>.env (export TEST_ASSET_...=) per release.
# Env: DRA_MIGRATE_BUILD_JOBS (go build -p, default 2).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${DRA_MIGRATE_CACHE:-$HOME/.cache/dra-migrate}"
K8S_MODS="$HERE/k8sbins"
ETCD_MOD="$HERE/etcdbin"
JOBS="${DRA_MIGRATE_BUILD_JOBS:-2}"
# The supported releases: one wrapper module each, k8sbins/<minor>/go.mod.
mapfile -t ALL_RELEASES < <(cd "$K8S_MODS" && ls -d 1.*/ 2>/dev/null | tr -d / | sort -t. -k2,2n)
# Every release's kubeadm accepts an external etcd >= 3.5.24 and 1.34-1.36 ship
# 3.6.x, so one 3.6 etcd serves all four (1.37 ships 3.7.0).
ETCD_MINOR="3.6"
K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
REFRESH=0
RELEASES=()

# Reproducible, offline-friendly Go settings: no cgo, no workspace, no
# toolchain download, no VCS stamping.
export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

select_releases() { # <comma-separated minors or "">
  local wanted="$1" minor
  if [[ -z "$wanted" ]]; then RELEASES=("${ALL_RELEASES[@]}"); return; fi
  IFS=', ' read -r -a RELEASES <<<"$wanted"
  for minor in "${RELEASES[@]}"; do
    [[ "$minor" =~ ^1\.[0-9]+$ ]] || die "release $minor is not of the form 1.37"
    ((REFRESH)) || [[ " ${ALL_RELEASES[*]} " == *" $minor "* ]] ||
      die "no wrapper for release $minor (supported: ${ALL_RELEASES[*]}); add one with --refresh --release $minor"
  done
}

parse_args() {
  local wanted="${DRA_MIGRATE_E2E_RELEASES:-}"
  while (($#)); do
    case "$1" in
      --refresh) REFRESH=1 ;;
      --release) shift; wanted="${1:?--release needs a release, e.g. 1.37}" ;;
      -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}"; exit 0 ;;
      *) die "unknown argument: $1" ;;
    esac
    shift
  done
  select_releases "$wanted"
}

# kube-apiserver -> TEST_ASSET_KUBE_APISERVER (envtest's naming).
asset_var() { local n="${1^^}"; printf 'TEST_ASSET_%s' "${n//-/_}"; }

# The Kubernetes version a binary reports, e.g. v1.35.4.
binary_version() { # <path>
  if [[ "$(basename "$1")" == kubectl ]]; then
    "$1" version --client=true -o yaml 2>/dev/null | sed -n 's/^[[:space:]]*gitVersion:[[:space:]]*//p' | head -n1
  else
    "$1" --version 2>/dev/null | awk '{print $NF; exit}'
  fi
}

# Prints the path of a binary the user supplied for this release, or nothing.
user_binary() { # <name> <minor>
  local name="$1" minor="$2" var candidate
  var="$(asset_var "$name")"
  for candidate in "${!var:-}" "${KUBEBUILDER_ASSETS:+$KUBEBUILDER_ASSETS/$name}"; do
    [[ -n "$candidate" && -f "$candidate" && -x "$candidate" ]] || continue
    if [[ "$name" == etcd || "$(binary_version "$candidate")" == "v$minor."* ]]; then
      printf '%s' "$candidate"; return
    fi
  done
}

pinned_version() { # <go.mod> <module path>
  [[ -f "$1" ]] || return 0
  awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' "$1"
}

newest_patch() { # <module> <minor, e.g. 1.34>
  local re="^v${2//./\\.}\\.[0-9]+$"
  (cd /tmp && go list -m -versions "$1") | tr ' ' '\n' | grep -E "$re" | sort -V | tail -n1
}

# The go directive and godebug lines of a go.mod (upstream's settings carry over:
# only the main module's godebug applies to a build).
go_directive() { sed -n 's/^go \([0-9.]*\)$/\1/p' "$1" | head -n1; }
godebug_lines() { awk '/^godebug \(/{b=1} b{print} b&&/^\)/{b=0} /^godebug [^(]/{print}' "$1"; }

write_k8s_wrapper() { # <minor> <version, e.g. v1.34.4>
  local minor="$1" version="$2" staging_version="v0.${2#v1.}" gomod dir="$K8S_MODS/$1"
  gomod="$(cd /tmp && go mod download -json "k8s.io/kubernetes@$version" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "$gomod" ]] || die "cannot download k8s.io/kubernetes@$version"
  # k8s.io/kubernetes pins every staging module at v0.0.0 and replaces it with
  # ./staging/...; a consumer must replace each one with its published tag.
  local -a staging
  mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\1#p' "$gomod")
  ((${#staging[@]})) || die "no staging modules found in $gomod"
  mkdir -p "$dir"
  {
    printf '// Wrapper module that pins the Kubernetes %s binaries built for tests/e2e.\n' "$minor"
    printf '// Regenerate with: tests/e2e/build-control-plane.sh --refresh --release %s\n' "$minor"
    printf 'module dra-migrate/tests/e2e/k8sbins-%s\n\ngo %s\n\n' "$minor" "$(go_directive "$gomod")"
    printf '// Copied from k8s.io/kubernetes %s: only the main module'"'"'s godebug applies.\n' "$version"
    godebug_lines "$gomod"
    printf '\nrequire k8s.io/kubernetes %s\n\ntool (\n' "$version"
    printf '\tk8s.io/kubernetes/cmd/%s\n' "${K8S_BINS[@]}"
    printf ')\n\nreplace (\n'
    printf '\t%s => %s '"$staging_version"'\n' $(for m in "${staging[@]}"; do echo "$m $m"; done)
    printf ')\n'
  } >"$dir/go.mod"
  rm -f "$dir/go.sum"
  (cd "$dir" && go mod tidy)
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
  local etcd minor k8s
  etcd="$(newest_patch go.etcd.io/etcd/server/v3 "$ETCD_MINOR")"
  [[ -n "$etcd" ]] || die "could not resolve the newest etcd $ETCD_MINOR from the module proxy"
  log "pinning etcd $etcd"
  write_etcd_wrapper "$etcd"
  for minor in "${RELEASES[@]}"; do
    k8s="$(newest_patch k8s.io/kubernetes "$minor")"
    [[ -n "$k8s" ]] || die "no k8s.io/kubernetes $minor release on the module proxy"
    log "pinning k8s.io/kubernetes $k8s"
    write_k8s_wrapper "$minor" "$k8s"
  done
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
resolve_all() { # <minor> <k8s dir> <etcd dir>
  local name found dir
  MISSING=()
  for name in etcd "${K8S_BINS[@]}"; do
    found="$(user_binary "$name" "$1")"
    if [[ -z "$found" ]]; then
      dir="$2"; [[ "$name" == etcd ]] && dir="$3"
      [[ -x "$dir/$name" ]] && found="$dir/$name"
    fi
    if [[ -n "$found" ]]; then RESOLVED[$name]="$found"; else MISSING+=("$name"); fi
  done
}

write_env_file() { # <minor>
  local env_file="$CACHE_ROOT/control-plane-$1.env" name
  mkdir -p "$CACHE_ROOT"
  {
    echo "# Written by tests/e2e/build-control-plane.sh; source it to reuse the $1 binaries."
    for name in etcd "${K8S_BINS[@]}"; do
      printf 'export %s=%q\n' "$(asset_var "$name")" "${RESOLVED[$name]}"
    done
  } >"$env_file"
  log "  env file: $env_file"
}

build_release() { # <minor> <etcd version>
  local minor="$1" etcd_version="$2" k8s_version name started=$SECONDS k8s_pkgs=()
  k8s_version="$(pinned_version "$K8S_MODS/$minor/go.mod" k8s.io/kubernetes)"
  [[ -n "$k8s_version" ]] || die "k8sbins/$minor is not pinned; run with --refresh --release $minor"
  local k8s_dir="$CACHE_ROOT/k8s-$k8s_version" etcd_dir="$CACHE_ROOT/etcd-$etcd_version"
  resolve_all "$minor" "$k8s_dir" "$etcd_dir"
  if ((${#MISSING[@]})); then
    log "building ${MISSING[*]} (k8s $k8s_version, etcd $etcd_version, -p $JOBS)"
    for name in "${MISSING[@]}"; do
      [[ "$name" == etcd ]] || k8s_pkgs+=("k8s.io/kubernetes/cmd/$name")
    done
    if [[ " ${MISSING[*]} " == *" etcd "* ]]; then
      go_build_into "$ETCD_MOD" "$etcd_dir" etcd "-s -w" go.etcd.io/etcd/server/v3
    fi
    if ((${#k8s_pkgs[@]})); then
      go_build_into "$K8S_MODS/$minor" "$k8s_dir" "" "$(k8s_ldflags "$k8s_version")" "${k8s_pkgs[@]}"
    fi
    resolve_all "$minor" "$k8s_dir" "$etcd_dir"
    ((${#MISSING[@]} == 0)) || die "still missing after build: ${MISSING[*]}"
  fi
  log "k8s $k8s_version, etcd $etcd_version ready in $((SECONDS - started))s"
  for name in etcd "${K8S_BINS[@]}"; do log "  $name: ${RESOLVED[$name]}"; done
  write_env_file "$minor"
}

main() {
  parse_args "$@"
  command -v go >/dev/null || die "Go is required to build the control plane"
  if ((REFRESH)); then refresh_wrappers; fi
  local etcd_version minor
  etcd_version="$(pinned_version "$ETCD_MOD/go.mod" go.etcd.io/etcd/server/v3)"
  [[ -n "$etcd_version" ]] || die "etcdbin is not pinned; run with --refresh"
  # One release at a time: each build peaks at about 1.5 GB while linking.
  for minor in "${RELEASES[@]}"; do build_release "$minor" "$etcd_version"; done
  log "all ready in ${SECONDS}s"
  echo "$CACHE_ROOT"
}

main "$@"
