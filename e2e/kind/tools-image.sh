#!/usr/bin/env bash
# The images of KEDA, the KubeRay operator and Prometheus for the kind cluster, made here from
# what the test bed already has: KEDA's operator and metrics server and KubeRay's operator from
# their Go modules (e2e/build.sh), Debian's /usr/bin/prometheus. One small image holds them all
# (each dynamically linked against glibc alone: the binaries and the loader and libc, user
# 65532), tagged under the names the manifests use, so `kind load docker-image` sends one set of
# layers:
#
#   DOCKER_HOST=unix://... e2e/kind/tools-image.sh SET_DIR   (prints the tags, one a line)
#
#   localhost/krs/keda:<KEDA_VERSION>          /keda, /keda-adapter (KEDA's config/ runs them so)
#   localhost/krs/kuberay-operator:<version>   /manager
#   localhost/krs/prometheus:debian            /bin/prometheus
# A tag is rebuilt when its image's label krs.key (the binaries' digests) differs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=e2e/versions.env
source "$here/../versions.env"
set_dir=$1
docker=/usr/bin/docker
: "${DOCKER_HOST:?set DOCKER_HOST}"
kuberay_version="${KRS_KUBERAY_VERSION:-v1.5.1}"
prometheus=/usr/bin/prometheus
[[ -x $prometheus ]] || { echo "tools-image.sh: $prometheus missing (apt-get install prometheus)" >&2; exit 2; }
bins=("$set_dir/bin/keda-operator" "$set_dir/bin/keda-adapter" "$set_dir/bin/kuberay-operator" "$prometheus")
key="$(sha256sum "${bins[@]}" "$0" | sha256sum | cut -c1-16)"
tags=("localhost/krs/keda:$KEDA_VERSION" "localhost/krs/kuberay-operator:$kuberay_version" "localhost/krs/prometheus:debian")
if [[ "$($docker image inspect -f '{{index .Config.Labels "krs.key"}}' "${tags[0]}" 2>/dev/null)" != "$key" ]]; then
  tree="$(mktemp -d)"
  trap 'rm -rf "$tree"' EXIT
  mkdir -p "$tree/bin" "$tree/lib64" "$tree/lib/x86_64-linux-gnu" "$tree/tmp" "$tree/etc" "$tree/prometheus"
  chmod 1777 "$tree/tmp"
  chown 65532:65532 "$tree/prometheus"
  install -m 0755 "$set_dir/bin/keda-operator" "$tree/keda"
  install -m 0755 "$set_dir/bin/keda-adapter" "$tree/keda-adapter"
  install -m 0755 "$set_dir/bin/kuberay-operator" "$tree/manager"
  install -m 0755 "$prometheus" "$tree/bin/prometheus"
  cp -L /lib64/ld-linux-x86-64.so.2 "$tree/lib64/"
  cp -L /lib/x86_64-linux-gnu/libc.so.6 "$tree/lib/x86_64-linux-gnu/"
  printf 'root:x:0:0::/:/nonexistent\nnonroot:x:65532:65532::/tmp:/nonexistent\n' >"$tree/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$tree/etc/group"
  [[ -d /etc/ssl/certs ]] && mkdir -p "$tree/etc/ssl" && cp -L /etc/ssl/certs/ca-certificates.crt "$tree/etc/ssl/cert.pem"
  tar -C "$tree" --numeric-owner -c . |
    $docker import --change 'USER 65532:65532' --change "LABEL krs.key=$key" - "${tags[0]}" >/dev/null
  for t in "${tags[@]:1}"; do $docker tag "${tags[0]}" "$t"; done
fi
printf '%s\n' "${tags[@]}"
