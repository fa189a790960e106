#!/usr/bin/env bash
# Build the real-control-plane test's binaries from Go modules into a cache outside the repository.
# Each component has its own directory keyed by its pinned version, its build recipe and the Go
# toolchain, so bumping one rebuilds only that one; a cache hit builds nothing. The last line of
# stdout is a directory holding bin/ (links to every binary) and the data files the test reads;
# progress and build times go to stderr.
#
#   controlplane   etcd + kube-apiserver + kube-controller-manager + kube-scheduler, and the real
#                  node's kubelet and kube-proxy (k8s.io/kubernetes)
#   kwok           fake nodes and pod status (sigs.k8s.io/kwok), kwok-stages/ its stage configs
#   keda-operator, keda-adapter   (github.com/kedacore/keda/v2), keda-crds/ its CRDs,
#                  keda-reference/ its externalscaler.proto and CRDs (for the compatibility tests)
#   helm           the Helm CLI (helm.sh/helm/v3), for the chart's tests (tests/real/control_plane/test_chart.py)
#   kuberay        the KubeRay operator (github.com/ray-project/kuberay/ray-operator), kuberay-crds/
#   containerd     containerd, ctr and containerd-shim-runc-v2 (github.com/containerd/containerd/v2)
#   runc           runc (github.com/opencontainers/runc; cgo with Debian's libseccomp)
#                  containerd and runc are the real node's runtime (tests/harness/real_node.py); its kubelet
#                  is in the controlplane binary.
#   coredns        CoreDNS with the few plugins the bed's cluster DNS needs (e2e/coredns/, our own
#                  main over github.com/coredns/coredns; tests/harness/service_network.py runs it)
#   kind           kind (sigs.k8s.io/kind), for the kind cluster of e2e/kind/
#
# Environment: KRS_E2E_CACHE (default ~/.cache/keda-ray-scaler/e2e); KRS_KUBERAY_VERSION (default
# v1.5.1) the KubeRay operator's version: v1.7.0 passes the KubeRay tests too, but the Go module
# proxy here serves its .info and .mod and refuses its .zip (403), so a clean machine cannot
# build it; the default stays the newest version a clean machine gets.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=e2e/versions.env
source "$here/versions.env"
root="${KRS_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keda-ray-scaler/e2e}"
export GOFLAGS="-buildvcs=false -trimpath"
gover="$(go env GOVERSION)"
log() { echo "build.sh: $*" >&2; }
total=0

grep -q "k8s.io/kubernetes ${KUBERNETES_VERSION}\$" "$here/controlplane/go.mod" || {
  echo "build.sh: KUBERNETES_VERSION=${KUBERNETES_VERSION} is not the version in controlplane/go.mod" >&2
  exit 2
}

grep -q "github.com/coredns/coredns ${COREDNS_VERSION}\$" "$here/coredns/go.mod" || {
  echo "build.sh: COREDNS_VERSION=${COREDNS_VERSION} is not the version in coredns/go.mod" >&2
  exit 2
}

# recipe_of NAME: the body of the function build_NAME (part of the cache key).
recipe_of() { declare -f "build_$1"; }

# component NAME KEY_INPUT...: build NAME into $root/NAME-<key> unless it is there; sets $dir.
component() {
  local name=$1 key
  shift
  key="$( { echo "$gover"; recipe_of "$name"; "$@"; } | sha256sum | cut -c1-16)"
  dir="$root/$name-$key"
  if [[ -f "$dir/.complete" ]]; then
    log "$name: cached in $dir (built in $(cat "$dir/.build-seconds") s)"
    return
  fi
  log "$name: building into $dir"
  local t=$SECONDS
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial/bin"
  "build_$name" "$dir.partial"
  echo $((SECONDS - t)) >"$dir.partial/.build-seconds"
  touch "$dir.partial/.complete"
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
  total=$((total + SECONDS - t))
  log "$name: built in $((SECONDS - t)) s"
}

module_dir() { go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'; }

build_kwok() {
  GOBIN="$1/bin" go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  local src
  src="$(module_dir "sigs.k8s.io/kwok@${KWOK_VERSION}")"
  mkdir -p "$1/kwok-stages"
  for stage in node-initialize node-heartbeat-with-lease pod-ready pod-complete pod-delete; do
    find "$src/kustomize/stage" -name "${stage}.yaml" -exec cp {} "$1/kwok-stages/" \;
  done
}

build_controlplane() {
  local minor="${KUBERNETES_VERSION#v}" ldflags="-s -w" pkg
  minor="${minor#*.}"
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$here/controlplane" && go build -ldflags "$ldflags" -o "$1/bin/controlplane" .)
}

build_keda() {
  # KEDA's go.mod has replace directives, so `go install pkg@version` is refused: build in a
  # writable copy of the module.
  local src="$root/src/keda-${KEDA_VERSION}" ldflags
  if [[ ! -d "$src" ]]; then
    mkdir -p "$root/src"
    rm -rf "$src.tmp"
    cp -r "$(module_dir "github.com/kedacore/keda/v2@${KEDA_VERSION}")" "$src.tmp"
    chmod -R u+w "$src.tmp"
    mv "$src.tmp" "$src"
  fi
  ldflags="-s -w -X github.com/kedacore/keda/v2/version.Version=${KEDA_VERSION#v}"
  (cd "$src" && go build -ldflags "$ldflags" -o "$1/bin/keda-operator" ./cmd/operator &&
    go build -ldflags "$ldflags" -o "$1/bin/keda-adapter" ./cmd/adapter)
  cp -r "$src/config/crd/bases" "$1/keda-crds"
  # KEDA's proto and CRDs as one reference directory (the layout of ../shared/keda), for the
  # compatibility tests where that copy is absent
  mkdir -p "$1/keda-reference"
  cp "$src/pkg/scalers/externalscaler/externalscaler.proto" "$1/keda-reference/"
  cp -r "$src/config/crd/bases" "$1/keda-reference/crds"
}

build_helm() {
  GOBIN="$1/bin" go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
    "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
}

# kuberay: the KubeRay operator (github.com/ray-project/kuberay/ray-operator, v1.5.1 unless
# KRS_KUBERAY_VERSION names another, e.g. v1.7.0) for the KubeRay-mode tests
# (tests/real/control_plane/test_real_kuberay.py), kuberay-crds/ its CRDs. `go install pkg@version`
# needs the proxy's version list (refused here), so build in a writable copy of the module.
KUBERAY_VERSION="${KRS_KUBERAY_VERSION:-v1.5.1}"
build_kuberay() {
  local src="$root/src/kuberay-${KUBERAY_VERSION}"
  if [[ ! -d "$src" ]]; then
    mkdir -p "$root/src"
    rm -rf "$src.tmp"
    cp -r "$(module_dir "github.com/ray-project/kuberay/ray-operator@${KUBERAY_VERSION}")" "$src.tmp"
    chmod -R u+w "$src.tmp"
    mv "$src.tmp" "$src"
  fi
  (cd "$src" && go build -ldflags "-s -w" -o "$1/bin/kuberay-operator" .)
  cp -r "$src/config/crd/bases" "$1/kuberay-crds"
}

# containerd: the real node's container runtime. A plain `go install` (its go.mod has no replace);
# no cgo, no btrfs snapshotter (overlayfs is used).
build_containerd() {
  local pkg=github.com/containerd/containerd/v2 cmd
  for cmd in containerd ctr containerd-shim-runc-v2; do
    CGO_ENABLED=0 GOBIN="$1/bin" go install -tags "no_btrfs urfave_cli_no_docs" \
      -ldflags "-s -w -X ${pkg}/version.Version=${CONTAINERD_VERSION}" "${pkg}/cmd/${cmd}@${CONTAINERD_VERSION}"
  done
}

# runc: the OCI runtime containerd's shim calls, the version containerd's own CI pins; seccomp
# needs cgo and libseccomp-dev (Debian).
build_runc() {
  CGO_ENABLED=1 GOBIN="$1/bin" go install -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w" \
    "github.com/opencontainers/runc@${RUNC_VERSION}"
}

# coredns: CoreDNS from its Go module through our own main (e2e/coredns/main.go), which links only
# the plugins the bed's Corefile uses; no cgo.
build_coredns() {
  (cd "$here/coredns" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$1/bin/coredns" .)
}

# kind: a plain `go install` (its go.mod has no replace); e2e/kind/node-image.sh reads its module.
build_kind() {
  GOBIN="$1/bin" go install -ldflags "-s -w" "sigs.k8s.io/kind@${KIND_VERSION}"
}

start=$SECONDS
component kwok echo "$KWOK_VERSION"
kwok=$dir
component controlplane cat "$here"/controlplane/go.mod "$here"/controlplane/go.sum "$here"/controlplane/*.go
controlplane=$dir
component keda echo "$KEDA_VERSION"
keda=$dir
component helm echo "$HELM_VERSION"
helm=$dir
component kuberay echo "$KUBERAY_VERSION"
kuberay=$dir
component containerd echo "$CONTAINERD_VERSION"
containerd=$dir
component runc echo "$RUNC_VERSION"
runc=$dir
component coredns cat "$here"/coredns/go.mod "$here"/coredns/go.sum "$here"/coredns/*.go
coredns=$dir
component kind echo "$KIND_VERSION"
kind=$dir

# The set the test uses: links to the components above.
set_key="$(echo "$kwok $controlplane $keda $helm $kuberay $containerd $runc $coredns $kind" | sha256sum | cut -c1-16)"
out="$root/set-$set_key"
if [[ ! -d "$out" ]]; then
  rm -rf "$out.partial"
  mkdir -p "$out.partial/bin"
  for component_dir in "$kwok" "$controlplane" "$keda" "$helm" "$kuberay" "$containerd" "$runc" "$coredns" "$kind"; do
    for f in "$component_dir"/bin/*; do ln -s "$f" "$out.partial/bin/"; done
  done
  ln -s "$kwok/kwok-stages" "$out.partial/kwok-stages"
  ln -s "$keda/keda-crds" "$out.partial/keda-crds"
  ln -s "$keda/keda-reference" "$out.partial/keda-reference"
  ln -s "$kuberay/kuberay-crds" "$out.partial/kuberay-crds"
  mv "$out.partial" "$out"
fi
log "built ${total} s of components now; ready in $((SECONDS - start)) s: $out"
echo "$out"
