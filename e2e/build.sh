#!/usr/bin/env bash
# Build the real-control-plane test's binaries from Go modules, into a cache directory outside the
# repository keyed by the pinned versions (e2e/versions.env, e2e/controlplane/) and the Go toolchain.
# A cache hit builds nothing. Prints the directory on the last line of stdout; progress on stderr.
#
#   controlplane   etcd + kube-apiserver + kube-controller-manager + kube-scheduler (k8s.io/kubernetes)
#   kwok           fake nodes and pod status (sigs.k8s.io/kwok), with its stage configs
#   keda-operator, keda-adapter, keda-crds/   (github.com/kedacore/keda/v2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=e2e/versions.env
source "$here/versions.env"

grep -q "k8s.io/kubernetes ${KUBERNETES_VERSION}\$" "$here/controlplane/go.mod" || {
  echo "build.sh: KUBERNETES_VERSION=${KUBERNETES_VERSION} is not the version in controlplane/go.mod" >&2
  exit 2
}
key="$( { go version; cat "$here/versions.env" "$here/build.sh" "$here"/controlplane/go.mod "$here"/controlplane/go.sum "$here"/controlplane/*.go; } | sha256sum | cut -c1-16)"
root="${KRS_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keda-ray-scaler/e2e}"
out="$root/$key"
log() { echo "build.sh: $*" >&2; }

if [[ -f "$out/.complete" ]]; then
  log "cache hit $out (built in $(cat "$out/.build-seconds") s); nothing to build"
  echo "$out"
  exit 0
fi
start=$SECONDS
rm -rf "$out.partial"
mkdir -p "$out.partial/bin"
export GOFLAGS="-buildvcs=false -trimpath"

log "kwok ${KWOK_VERSION}"
t=$SECONDS
GOBIN="$out.partial/bin" go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
kwok_dir="$(go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
mkdir -p "$out.partial/kwok-stages"
for stage in node-initialize node-heartbeat-with-lease pod-ready pod-complete pod-delete; do
  find "$kwok_dir/kustomize/stage" -name "${stage}.yaml" -exec cp {} "$out.partial/kwok-stages/" \;
done
log "kwok built in $((SECONDS - t)) s"

log "controlplane (Kubernetes ${KUBERNETES_VERSION}, etcd from controlplane/go.mod)"
t=$SECONDS
minor="${KUBERNETES_VERSION#v}"; minor="${minor#*.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done
(cd "$here/controlplane" && go build -ldflags "$ldflags" -o "$out.partial/bin/controlplane" .)
log "controlplane built in $((SECONDS - t)) s"

log "KEDA ${KEDA_VERSION}"
t=$SECONDS
keda_dir="$(go mod download -json "github.com/kedacore/keda/v2@${KEDA_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
src="$root/src/keda-${KEDA_VERSION}"
if [[ ! -d "$src" ]]; then
  mkdir -p "$root/src"
  cp -r "$keda_dir" "$src.tmp" && chmod -R u+w "$src.tmp" && mv "$src.tmp" "$src"
fi
keda_ldflags="-s -w -X github.com/kedacore/keda/v2/version.Version=${KEDA_VERSION#v}"
(cd "$src" && go build -ldflags "$keda_ldflags" -o "$out.partial/bin/keda-operator" ./cmd/operator \
  && go build -ldflags "$keda_ldflags" -o "$out.partial/bin/keda-adapter" ./cmd/adapter)
cp -r "$src/config/crd/bases" "$out.partial/keda-crds"
log "KEDA built in $((SECONDS - t)) s"

echo $((SECONDS - start)) > "$out.partial/.build-seconds"
touch "$out.partial/.complete"
rm -rf "$out"
mv "$out.partial" "$out"
log "built everything in $((SECONDS - start)) s into $out"
echo "$out"
