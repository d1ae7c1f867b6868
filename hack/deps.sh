#!/usr/bin/env bash
# Installs and builds everything Quorum's tests need, pinned by hack/versions.env. Idempotent: a second run
# only checks stamps and takes seconds.
#
#   hack/deps.sh            everything: npm ci, nftables, etcd 3.7 + 3.6, Kubernetes 1.37 + 1.36 (kube-apiserver,
#                           kube-controller-manager, kube-scheduler, kubeadm), CAPI core + kubeadm bootstrap
#                           managers + clusterctl, the kubelet port-forward server (hack/tools/kubelet-portforward),
#                           bin/ links
#   hack/deps.sh test       what make test needs: npm ci, etcd, Kubernetes 1.37, CAPI, the kubelet port-forward
#                           server, bin/ links (no 1.36 set)
#   hack/deps.sh previous   what only e2e's kubeadm nodes need: nftables (apt-get when missing), the Kubernetes 1.36
#                           set and bin/ links; .ci/run builds it in the background at the lowest CPU priority while
#                           make test runs
#   hack/deps.sh npm        npm ci only (skipped when node_modules matches package-lock.json)
#   hack/deps.sh etcd       the etcd builds and their bin/ links only
#   hack/deps.sh tools      the Go builds (etcd included) and bin/ links only
#   hack/deps.sh wrappers   rewrite hack/tools/*/go.mod and go.sum for the versions in hack/versions.env
#
# Binaries are cached in ${QUORUM_CACHE:-~/.cache/quorum}/etcd-<version>/, k8s-<version>/, capi-<version>/ and
# kubelet-portforward-<Kubernetes version>/,
# each with a stamp (version + hash of its wrapper go.mod/go.sum), and symlinked into bin/ (ignored by git).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# shellcheck source=versions.env
source hack/versions.env
: "${KUBERNETES_VERSION:?hack/versions.env must set KUBERNETES_VERSION}"
: "${KUBERNETES_PREVIOUS_VERSION:?hack/versions.env must set KUBERNETES_PREVIOUS_VERSION}"
: "${CAPI_VERSION:?hack/versions.env must set CAPI_VERSION}"
: "${ETCD_VERSION:?hack/versions.env must set ETCD_VERSION}"
: "${ETCD_PREVIOUS_VERSION:?hack/versions.env must set ETCD_PREVIOUS_VERSION}"

cache=${QUORUM_CACHE:-$HOME/.cache/quorum}
capi_dir=$cache/capi-$CAPI_VERSION
mkdir -p "$cache" "$repo/.cache"

step_number=0
step() {
  step_number=$((step_number + 1))
  printf '==> [deps %d] %s\n' "$step_number" "$*"
}
note() { printf '    %s\n' "$*"; }
die() {
  printf 'deps: %s\n' "$*" >&2
  exit 1
}

sha() { cat "$@" | sha256sum | cut -c1-16; }

# Builds by several shells at once (parallel `make test` runs) must not write the same file twice.
with_lock() {
  local lock=$1
  shift
  (
    flock 9
    "$@"
  ) 9>"$lock"
}

npm_ci() {
  step "npm packages"
  command -v npm >/dev/null 2>&1 || die "npm is not on PATH: install Node.js 20+"
  local stamp=node_modules/.quorum-deps-stamp
  local want
  want="$(sha package-lock.json) node $(node --version)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    note "node_modules matches package-lock.json (stamp $stamp)"
    return
  fi
  # A tree installed before stamps existed is adopted if npm itself says it matches the lock file, so a
  # shared checkout does not get its node_modules deleted under running tests.
  if [ ! -f "$stamp" ] && [ -d node_modules ] && npm ls --all >/dev/null 2>&1; then
    echo "$want" >"$stamp"
    note "node_modules already matches package-lock.json (npm ls); stamped"
    return
  fi
  note "running npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
}

need_go() {
  command -v go >/dev/null 2>&1 ||
    die "go is not on PATH: install Go $(sed -n 's/^go //p' hack/tools/kube-apiserver/go.mod) or newer to build etcd, kube-apiserver and CAPI"
}

# -mod=readonly when the committed go.sum covers the build; otherwise -mod=mod (and say so: commit go.sum).
mod_flag() {
  local module_dir=$1
  shift
  if (cd "$module_dir" && go list -mod=readonly -buildvcs=false -deps "$@" >/dev/null 2>&1); then
    echo "-mod=readonly"
  else
    note "warning: $module_dir/go.sum is incomplete; building with -mod=mod (commit the updated go.sum)" >&2
    echo "-mod=mod"
  fi
}

# go build of a wrapper module's main package into $2, stripped; written beside it first, so a failed build leaves
# the cached binary as it was. $3 says what is built, for the progress line.
build_wrapper_main() {
  local module=$1 out=$2 what=$3
  mkdir -p "$(dirname "$out")"
  local flag started_build
  flag=$(mod_flag "$module" .)
  note "go build $module ($what)"
  started_build=$(date +%s)
  (cd "$module" && go build "$flag" -buildvcs=false -trimpath -ldflags "-s -w" -o "$out.tmp.$$" .)
  mv -f "$out.tmp.$$" "$out"
  note "built in $(($(date +%s) - started_build)) s"
}

# etcd's own main (go.etcd.io/etcd/v3) replaces its submodules with local paths, which a dependent module
# ignores, so each hack/tools/etcd-<major.minor> wrapper has a main.go calling etcdmain.Main(os.Args), as
# upstream's main does. The version string is a constant in go.etcd.io/etcd/api/v3/version: no ldflags needed.
etcd_module() { local minor=${1#v}; echo "hack/tools/etcd-${minor%.*}"; }

build_etcd() {
  local version=$1
  local module out=$cache/etcd-$version/etcd
  module=$(etcd_module "$version")
  local key
  key="etcd $version $(sha $module/go.mod $module/go.sum $module/main.go)"
  if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$key" ]; then
    note "cached: $out"
    return
  fi
  need_go
  require_pin $module/go.mod go.etcd.io/etcd/server/v3 "$version"
  build_wrapper_main "$module" "$out" "etcd $version; first build takes 1-2 min on 2 cores"
  local printed
  printed=$("$out" --version | sed -n 's/^etcd Version: //p')
  [ "v$printed" = "$version" ] || die "$out --version says etcd $printed, not $version"
  echo "$key" >"$out.stamp"
}

# bin/etcd is the one the tests, e2e and bench run (test/env/tools.ts); bin/etcd-<major.minor> name each
# version for nodes of a Kubernetes minor that pins another etcd.
build_etcds() {
  local version
  for version in "$ETCD_VERSION" "$ETCD_PREVIOUS_VERSION"; do
    step "etcd $version (from go.etcd.io/etcd/server/v3 via $(etcd_module "$version"))"
    with_lock "$cache/.etcd-$version.lock" build_etcd "$version"
  done
  step "etcd links in bin/"
  mkdir -p bin
  ln -sfn "$cache/etcd-$ETCD_VERSION/etcd" bin/etcd
  for version in "$ETCD_VERSION" "$ETCD_PREVIOUS_VERSION"; do
    local minor=${version#v}
    ln -sfn "$cache/etcd-$version/etcd" "bin/etcd-${minor%.*}"
    note "bin/etcd-${minor%.*}       -> $(readlink "bin/etcd-${minor%.*}")"
  done
  note "bin/etcd           -> $(readlink bin/etcd)"
}

require_pin() {
  local gomod=$1 module=$2 version=$3
  grep -qE "^(require )?[[:space:]]*$module $version( |$)" "$gomod" ||
    die "$gomod does not require $module $version (pinned in hack/versions.env): run hack/deps.sh wrappers"
}

# Each Kubernetes minor has its own wrapper module (its own staging-module replaces): hack/tools/kube-apiserver
# for KUBERNETES_VERSION, hack/tools/kube-apiserver-<major.minor> for KUBERNETES_PREVIOUS_VERSION.
k8s_module() {
  if [ "$1" = "$KUBERNETES_VERSION" ]; then
    echo hack/tools/kube-apiserver
  else
    local minor=${1#v}
    echo "hack/tools/kube-apiserver-${minor%.*}"
  fi
}
k8s_minor() {
  local minor=${1#v}
  echo "${minor%.*}"
}

# build_k8s <command> <version>: one k8s.io/kubernetes command (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubeadm) from that version's wrapper module, cached by version and the module's go.mod/go.sum.
build_k8s() {
  local name=$1 version=$2
  local module k8s_dir=$cache/k8s-$version
  module=$(k8s_module "$version")
  local out=$k8s_dir/$name minutes
  local key
  key="$name $version $(sha $module/go.mod $module/go.sum)"
  if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$key" ]; then
    note "cached: $out"
    return
  fi
  if [ -x "$out" ] && [ ! -f "$out.stamp" ] && [ "$(k8s_version_of "$out")" = "$version" ]; then
    echo "$key" >"$out.stamp"
    note "cached (adopted, version matches): $out"
    return
  fi
  need_go
  require_pin $module/go.mod k8s.io/kubernetes "$version"
  mkdir -p "$k8s_dir"
  local minor=${version#v*.}
  minor=${minor%%.*}
  local major=${version#v}
  major=${major%%.*}
  local pkg=k8s.io/kubernetes/cmd/$name flag
  flag=$(mod_flag $module $pkg)
  case $name in
    kube-apiserver) minutes="~10 min on 2 cores" ;;
    *) minutes="a few minutes more once kube-apiserver's packages are built" ;;
  esac
  note "go build $pkg ($version; first build takes $minutes)"
  local started_build
  started_build=$(date +%s)
  (cd $module && go build "$flag" -buildvcs=false -trimpath -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$version \
    -X k8s.io/component-base/version.gitMajor=$major \
    -X k8s.io/component-base/version.gitMinor=$minor \
    -X k8s.io/component-base/version.gitTreeState=clean" -o "$out.tmp.$$" $pkg)
  mv -f "$out.tmp.$$" "$out"
  [ "$(k8s_version_of "$out")" = "$version" ] ||
    die "$out does not report $version (--version / version -o short prints '$(k8s_version_of "$out")')"
  echo "$key" >"$out.stamp"
  note "built in $(($(date +%s) - started_build)) s"
}

# kubeadm prints its version with `kubeadm version -o short`; the control-plane commands with --version.
k8s_version_of() {
  case $(basename "$1") in
    kubeadm) "$1" version -o short 2>/dev/null ;;
    *) "$1" --version 2>/dev/null | sed -n 's/^Kubernetes //p' ;;
  esac
}

k8s_commands=(kube-apiserver kube-controller-manager kube-scheduler kubeadm)

build_k8s_minor() {
  local version=$1 name
  local module
  module=$(k8s_module "$version")
  for name in "${k8s_commands[@]}"; do
    step "$name $version (from k8s.io/kubernetes via $module)"
    with_lock "$cache/.k8s-$version.lock" build_k8s "$name" "$version"
  done
}

build_capi() {
  local module=hack/tools/capi
  local key
  key="capi $CAPI_VERSION $(sha $module/go.mod $module/go.sum)"
  if [ -x "$capi_dir/capi-manager" ] && [ -x "$capi_dir/capi-kubeadm-bootstrap-manager" ] && [ -x "$capi_dir/clusterctl" ] &&
    [ "$(cat "$capi_dir/.stamp" 2>/dev/null)" = "$key" ]; then
    note "cached: $capi_dir/{capi-manager,capi-kubeadm-bootstrap-manager,clusterctl}"
    return
  fi
  need_go
  require_pin $module/go.mod sigs.k8s.io/cluster-api "$CAPI_VERSION"
  mkdir -p "$capi_dir"
  local minor=${CAPI_VERSION#v*.}
  minor=${minor%%.*}
  local major=${CAPI_VERSION#v}
  major=${major%%.*}
  local ldflags="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$CAPI_VERSION \
    -X sigs.k8s.io/cluster-api/version.gitMajor=$major -X sigs.k8s.io/cluster-api/version.gitMinor=$minor \
    -X sigs.k8s.io/cluster-api/version.gitTreeState=clean"
  local flag
  flag=$(mod_flag $module sigs.k8s.io/cluster-api/core sigs.k8s.io/cluster-api/bootstrap/kubeadm sigs.k8s.io/cluster-api/cmd/clusterctl)
  note "go build sigs.k8s.io/cluster-api/core, bootstrap/kubeadm and cmd/clusterctl ($CAPI_VERSION; first build takes ~8 min on 2 cores)"
  local started_build name pkg
  started_build=$(date +%s)
  for name in capi-manager:core capi-kubeadm-bootstrap-manager:bootstrap/kubeadm clusterctl:cmd/clusterctl; do
    pkg=sigs.k8s.io/cluster-api/${name#*:}
    name=${name%%:*}
    (cd $module && go build "$flag" -buildvcs=false -trimpath -ldflags "$ldflags" -o "$capi_dir/$name.tmp.$$" "$pkg")
  done
  for name in capi-manager capi-kubeadm-bootstrap-manager clusterctl; do
    mv -f "$capi_dir/$name.tmp.$$" "$capi_dir/$name"
  done
  echo "$key" >"$capi_dir/.stamp"
  note "built in $(($(date +%s) - started_build)) s"
}

# bin/<command> is the KUBERNETES_VERSION build (what the tests run); bin/<command>-<major.minor> names each
# minor's build, for kubeadm nodes of either minor (the process kubelet maps an image tag to one of these).
link_bin() {
  mkdir -p bin
  local version name
  for name in "${k8s_commands[@]}"; do
    ln -sfn "$cache/k8s-$KUBERNETES_VERSION/$name" "bin/$name"
    note "$(printf '%-34s' "bin/$name") -> $(readlink "bin/$name")"
    for version in "$KUBERNETES_VERSION" "$KUBERNETES_PREVIOUS_VERSION"; do
      ln -sfn "$cache/k8s-$version/$name" "bin/$name-$(k8s_minor "$version")"
      note "$(printf '%-34s' "bin/$name-$(k8s_minor "$version")") -> $(readlink "bin/$name-$(k8s_minor "$version")")"
    done
  done
  for name in capi-manager capi-kubeadm-bootstrap-manager clusterctl; do
    ln -sfn "$capi_dir/$name" "bin/$name"
    note "$(printf '%-34s' "bin/$name") -> $(readlink "bin/$name")"
  done
  # Absent after `hack/deps.sh previous` alone; test and tools build it.
  local kpf=$cache/kubelet-portforward-$KUBERNETES_VERSION/quorum-kubelet-portforward
  if [ -x "$kpf" ]; then
    ln -sfn "$kpf" bin/quorum-kubelet-portforward
    note "$(printf '%-34s' bin/quorum-kubelet-portforward) -> $(readlink bin/quorum-kubelet-portforward)"
  fi
}

# The kubelet's /portForward server (kube-apiserver's pods/portforward proxies to it): a small program of ours on
# k8s.io/cri-streaming at KUBERNETES_VERSION's staging version, for the integration tests and e2e's process kubelet.
kubelet_portforward_module=hack/tools/kubelet-portforward
build_kubelet_portforward() {
  local module=$kubelet_portforward_module
  local out=$cache/kubelet-portforward-$KUBERNETES_VERSION/quorum-kubelet-portforward
  local key
  key="kubelet-portforward $KUBERNETES_VERSION $(sha $module/go.mod $module/go.sum $module/*.go)"
  if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$key" ]; then
    note "cached: $out"
    return
  fi
  need_go
  require_pin $module/go.mod k8s.io/cri-streaming "v0.${KUBERNETES_VERSION#v1.}"
  build_wrapper_main "$module" "$out" "first build takes ~20 s on 2 cores"
  echo "$key" >"$out.stamp"
}

# e2e's kubeadm Machines each load an nftables ruleset (e2e/provider/kubeadm/firewall.ts: etcd's client port closed
# to the management side, as on a cloud). Installed from the distribution when missing; needs root, as make e2e does.
system_packages() {
  step "system packages: nftables"
  if command -v nft >/dev/null 2>&1; then
    note "nft: $(nft --version)"
    return
  fi
  command -v apt-get >/dev/null 2>&1 || die "nft (nftables) is missing and there is no apt-get: install nftables"
  [ "$(id -u)" = 0 ] || die "nft (nftables) is missing: install it (apt-get install nftables) or run as root"
  with_lock "$cache/.apt.lock" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nftables >/dev/null'
  note "installed nft: $(nft --version)"
}

build_current_tools() {
  step "kubelet port-forward server (k8s.io/cri-streaming of Kubernetes $KUBERNETES_VERSION via $kubelet_portforward_module)"
  with_lock "$cache/.kubelet-portforward.lock" build_kubelet_portforward
  build_k8s_minor "$KUBERNETES_VERSION"
  step "CAPI core and kubeadm bootstrap managers, clusterctl $CAPI_VERSION (from sigs.k8s.io/cluster-api via hack/tools/capi)"
  with_lock "$cache/.capi-$CAPI_VERSION.lock" build_capi
}

build_tools() {
  build_current_tools
  build_k8s_minor "$KUBERNETES_PREVIOUS_VERSION"
  step "links in bin/"
  link_bin
}

print_versions() {
  step "versions"
  note "etcd            $(bin/etcd --version | sed -n 's/^etcd Version: //p') (bin/etcd; also $(cd bin && echo etcd-*))"
  note "node            $(node --version)"
  local previous
  previous=$(k8s_minor "$KUBERNETES_PREVIOUS_VERSION")
  # The previous minor is absent after `hack/deps.sh test` until `hack/deps.sh previous` (or all) built it.
  note "kube-apiserver  $(bin/kube-apiserver --version) (bin/kube-apiserver; also $(bin/kube-apiserver-"$previous" --version 2>/dev/null || echo "no $previous build yet"))"
  note "kubeadm         $(bin/kubeadm version -o short) (bin/kubeadm; also $(bin/kubeadm-"$previous" version -o short 2>/dev/null || echo "no $previous build yet"))"
  note "CAPI            $CAPI_VERSION (clusterctl $(bin/clusterctl version -o short 2>/dev/null || echo '?'))"
  if command -v go >/dev/null 2>&1; then note "go              $(go env GOVERSION)"; fi
}

# Rewrites the wrapper modules for the pinned versions. k8s.io/kubernetes requires its staging modules at
# v0.0.0 with ./staging replaces that a dependent module ignores, so every staging module gets a replace to
# the matching v0.<minor>.<patch>. Needs the module proxy (network).
regenerate_k8s_wrapper() {
  local version=$1
  local module staging_version="v0.${version#v1.}"
  module=$(k8s_module "$version")
  step "$module for k8s.io/kubernetes $version"
  if [ ! -f "$module/go.mod" ]; then
    mkdir -p "$module"
    printf '// Wrapper module: builds kube-apiserver, kube-controller-manager, kube-scheduler and kubeadm %s from k8s.io/kubernetes. Regenerate with `hack/deps.sh wrappers`.\nmodule quorum.local/tools/%s\n\ngo %s\n' \
      "$(k8s_minor "$version")" "$(basename "$module")" "$(sed -n 's/^go //p' hack/tools/kube-apiserver/go.mod)" >"$module/go.mod"
  fi
  local kubernetes_gomod
  kubernetes_gomod=$(cd $module && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$kubernetes_gomod" ] || die "could not download k8s.io/kubernetes@$version's go.mod"
  (
    cd $module
    # A tool directive (not a tools.go import: main packages cannot be imported) makes `go mod tidy` keep
    # every module the binary needs, so builds work with -mod=readonly from the committed go.sum.
    local tools=() name
    for name in "${k8s_commands[@]}"; do tools+=("-tool=k8s.io/kubernetes/cmd/$name"); done
    go mod edit -require="k8s.io/kubernetes@$version" "${tools[@]}"
    sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\1|p' "$kubernetes_gomod" | while read -r staging; do
      go mod edit -replace="$staging=$staging@$staging_version"
    done
    go mod tidy
  )
  note "$(grep -c '=> k8s.io/' $module/go.mod) staging replaces at $staging_version"
}

regenerate_wrappers() {
  need_go
  regenerate_k8s_wrapper "$KUBERNETES_VERSION"
  regenerate_k8s_wrapper "$KUBERNETES_PREVIOUS_VERSION"
  step "hack/tools/capi for sigs.k8s.io/cluster-api $CAPI_VERSION"
  (
    cd hack/tools/capi
    go mod edit -require="sigs.k8s.io/cluster-api@$CAPI_VERSION" -replace="sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@$CAPI_VERSION" \
      -tool=sigs.k8s.io/cluster-api/core -tool=sigs.k8s.io/cluster-api/bootstrap/kubeadm -tool=sigs.k8s.io/cluster-api/cmd/clusterctl
    go mod tidy
  )
  step "$kubelet_portforward_module for k8s.io/cri-streaming v0.${KUBERNETES_VERSION#v1.}"
  (cd $kubelet_portforward_module && go mod edit -require="k8s.io/cri-streaming@v0.${KUBERNETES_VERSION#v1.}" && go mod tidy)
  note "done: review and commit hack/tools/*/go.mod and go.sum"
}

regenerate_etcd_wrappers() {
  need_go
  local version module
  for version in "$ETCD_VERSION" "$ETCD_PREVIOUS_VERSION"; do
    module=$(etcd_module "$version")
    step "$module for go.etcd.io/etcd/server/v3 $version"
    [ -f "$module/main.go" ] || die "$module/main.go is missing: restore it from git (a new minor copies another's)"
    (cd "$module" && go mod edit -require="go.etcd.io/etcd/server/v3@$version" && go mod tidy)
  done
}

started=$(date +%s)
case "${1:-all}" in
  all)
    npm_ci
    build_etcds
    build_tools
    system_packages
    print_versions
    ;;
  test)
    npm_ci
    build_etcds
    build_current_tools
    step "links in bin/"
    link_bin
    print_versions
    ;;
  previous)
    system_packages
    build_k8s_minor "$KUBERNETES_PREVIOUS_VERSION"
    step "links in bin/"
    link_bin
    ;;
  npm) npm_ci ;;
  etcd) build_etcds ;;
  tools)
    build_etcds
    build_tools
    ;;
  wrappers)
    regenerate_etcd_wrappers
    regenerate_wrappers
    ;;
  *) die "unknown step '$1': use all, test, previous, npm, etcd, tools or wrappers" ;;
esac
printf '==> deps done in %d s\n' "$(($(date +%s) - started))"
