#!/usr/bin/env bash
# Build a kind node image here, nothing pulled from a registry, the way kind's own
# `kind build node-image` assembles one (sigs.k8s.io/kind pkg/build/nodeimage and images/base):
#
#   DOCKER_HOST=unix://... e2e/kind/node-image.sh     (root; the last line of stdout is the image)
#
#   1. the base (kind's images/base): Debian bookworm from debootstrap with systemd and the
#      packages kind's base installs, kind's own files/ from its Go module (entrypoint, unit
#      files, containerd config), the bed's containerd, ctr, shim and runc (e2e/build.sh), the
#      CNI plugins of Debian's containernetworking-plugins in /opt/cni/bin;
#   2. Kubernetes (kind's "bits"): kubelet, kubeadm and kubectl as links to the bed's one
#      controlplane binary (it runs the component its name says), /kind/version;
#   3. the images kubeadm wants (`kubeadm config images list`), made here: one image holding
#      the Debian rootfs (kube-proxy wants iptables and nft) and the controlplane binary with a
#      link per component (kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy,
#      etcd) tagged under each name, CoreDNS from e2e/kind/coredns, the bed's pause (the layer
#      e2e/images.py builds) under the pause names kubeadm and kind's containerd config use;
#      imported into the node's containerd (namespace k8s.io, pinned) in a build container, as
#      kind does, then `docker commit`.
#   No kindnetd: its source is not in kind v0.33.0's module (images/ holds base, node and the
#   local-path ones; kindnetd lives in its own repository and kind's build pulls its image),
#   so the node carries a bridge CNI config instead (/etc/cni/net.d/10-krs-bridge.conflist) and
#   the cluster is made with networking.disableDefaultCNI (e2e/kind/cluster.yaml).
#
# Needs network for debootstrap (deb.debian.org) unless the base is cached, and a Docker Engine
# (e2e/docker/engine.sh: its socket is reachable from any network namespace). Cached under
# KRS_KIND_CACHE (default ~/.cache/keda-ray-scaler/kind): the base rootfs by its package list.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=e2e/versions.env
source "$here/../versions.env"
cache="${KRS_KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keda-ray-scaler/kind}"
image="${KRS_KIND_NODE_IMAGE:-localhost/krs/kind-node:${KUBERNETES_VERSION}}"
docker=/usr/bin/docker
log() { echo "node-image.sh: $*" >&2; }
# --prepare: only what needs the network, the debootstrap base (1a below) and CoreDNS's Go
# modules: e2e/run.sh runs it before it enters the bed's network namespace (no route out),
# where the rest runs.
rootfs_only=
[[ ${1:-} != --prepare ]] || rootfs_only=1
[[ -n $rootfs_only ]] || : "${DOCKER_HOST:?set DOCKER_HOST (e2e/docker/engine.sh start prints it)}"
export DOCKER_HOST
mkdir -p "$cache"
start=$SECONDS

set_dir="$(bash "$here/../build.sh" | tail -1)"
bin="$set_dir/bin"
kind_src="$(go mod download -json "sigs.k8s.io/kind@${KIND_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
files="$kind_src/images/base/files"

# 1a. debootstrap: the packages of kind's images/base/Dockerfile that bookworm has
# (fuse-overlayfs, nfs-common, open-iscsi left out: rootless and storage extras), and the CNI plugins.
packages="systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod"
packages+=",libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,e2fsprogs,containernetworking-plugins"
rootfs="$cache/rootfs-$(echo "$packages" | sha256sum | cut -c1-16)"
if [[ ! -d $rootfs ]]; then
  log "debootstrap bookworm into $rootfs"
  t=$SECONDS
  rm -rf "$rootfs.partial"
  debootstrap --variant=minbase --include="$packages" bookworm "$rootfs.partial" \
    http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
    { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
  rm -rf "$rootfs.partial"/var/lib/apt/lists/* "$rootfs.partial"/var/cache/apt/archives/*.deb
  mv "$rootfs.partial" "$rootfs"
  log "debootstrap: $((SECONDS - t)) s"
fi
[[ -z $rootfs_only ]] || { (cd "$here/coredns" && go mod download); exit 0; }

# 1b + 2. the node's tree: a copy of the rootfs with kind's base steps applied
work="$cache/work"
rm -rf "$work"
mkdir -p "$work"
tree="$work/node"
cp -a "$rootfs" "$tree"
install -m 0755 "$files"/usr/local/bin/* "$tree/usr/local/bin/"
mkdir -p "$tree/kind/bin" "$tree/LICENSES" "$tree/etc/systemd/system/kubelet.service.d"
install -m 0644 "$files"/kind/README.txt "$tree/kind/"
install -m 0755 "$files"/kind/bin/* "$tree/kind/bin/"
install -m 0644 "$files"/etc/crictl.yaml "$tree/etc/"
install -m 0644 -D "$files"/etc/containerd/config.toml "$tree/etc/containerd/config.toml"
install -m 0644 "$files"/etc/default/kubelet "$tree/etc/default/"
install -m 0644 "$files"/etc/sysctl.d/* "$tree/etc/sysctl.d/"
find "$files/etc/systemd/system" -maxdepth 1 -type f -exec install -m 0644 {} "$tree/etc/systemd/system/" \;
install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$tree/etc/systemd/system/kubelet.service.d/"
chroot "$tree" bash -euc '
  find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
  rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/*
  rm -f /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev*
  rm -f /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
  echo ReadKMsg=no >>/etc/systemd/journald.conf
  ln -sf /usr/lib/systemd/systemd /sbin/init
  systemctl enable kubelet.service containerd.service undo-mount-hacks.service
  systemctl mask systemd-binfmt.service
  mkdir -p /etc/kubernetes/manifests'
# the bed's runtime, where kind's base puts its own
for b in containerd ctr containerd-shim-runc-v2; do install -m 0755 "$bin/$b" "$tree/usr/local/bin/"; done
install -m 0755 "$bin/runc" "$tree/usr/local/sbin/runc"
"$bin/ctr" oci spec |
  jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
  jq 'del(.process.rlimits)' >"$tree/etc/containerd/cri-base.json"
mkdir -p "$tree/opt/cni/bin"
for p in bridge host-local loopback portmap ptp; do cp "$tree/usr/lib/cni/$p" "$tree/opt/cni/bin/"; done
mkdir -p "$tree/etc/cni/net.d"
cat >"$tree/etc/cni/net.d/10-krs-bridge.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "krs-bridge",
  "plugins": [
    {"type": "bridge", "bridge": "krs0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
install -m 0755 "$bin/controlplane" "$tree/usr/local/bin/kube-controlplane"
for b in kubelet kubeadm kubectl; do ln -sf /usr/local/bin/kube-controlplane "$tree/usr/bin/$b"; done
echo -n "$KUBERNETES_VERSION" >"$tree/kind/version"

# The sandbox adaptation (only where root lacks CAP_SYS_RESOURCE, see e2e/docker/krs-runc): the
# node's systemd cannot raise a unit's file limit to infinity nor lower its OOM score, and
# containerd cannot give a pod's sandbox -998; a user's machine skips this.
if (((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status) >> 24 & 1) == 0)); then
  log "CAP_SYS_RESOURCE is missing here: units keep the node's limits, containerd restricts OOM scores"
  for unit in containerd kubelet; do
    mkdir -p "$tree/etc/systemd/system/$unit.service.d"
    printf '[Service]\nLimitNOFILE=%s\nOOMScoreAdjust=0\n' "$(ulimit -Hn)" \
      >"$tree/etc/systemd/system/$unit.service.d/90-krs-sandbox.conf"
  done
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$tree/etc/containerd/config.toml"
fi

# 3. the images kubeadm wants, under its names
mapfile -t wanted < <(chroot "$tree" kubeadm config images list --kubernetes-version "$KUBERNETES_VERSION" 2>/dev/null)
sandbox="$(sed -n 's/^ *sandbox_image = "\(.*\)"/\1/p' "$tree/etc/containerd/config.toml")"
log "kubeadm wants: ${wanted[*]}; sandbox image $sandbox"
comp="$work/components"
mkdir -p "$comp/usr/local/bin"
cp -a "$rootfs"/. "$comp/"
install -m 0755 "$bin/controlplane" "$comp/usr/local/bin/kube-controlplane"
for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd; do
  ln -sf kube-controlplane "$comp/usr/local/bin/$c"
done
tar -C "$comp" -c . | $docker import - localhost/krs/kube-components:"$KUBERNETES_VERSION" >/dev/null
# CoreDNS with the plugins of kubeadm's Corefile (e2e/kind/coredns; the bed's links fewer)
coredns="$cache/coredns-$({ go env GOVERSION; cat "$here"/coredns/go.* "$here"/coredns/*.go; } | sha256sum | cut -c1-16)"
if [[ ! -x $coredns ]]; then
  t=$SECONDS
  (cd "$here/coredns" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath" go build -ldflags "-s -w" -o "$coredns.partial" .)
  mv "$coredns.partial" "$coredns"
  log "coredns: built in $((SECONDS - t)) s"
fi
mkdir -p "$work/coredns"
install -m 0755 "$coredns" "$work/coredns/coredns"
tar -C "$work/coredns" -c . | $docker import --change 'ENTRYPOINT ["/coredns"]' - localhost/krs/coredns:1 >/dev/null
pause_layer="$(find "$(dirname "$set_dir")" -path '*/layer-pause-*/layer.tar' | head -1)"
[[ -n $pause_layer ]] || { log "no pause layer: run e2e/images.py first"; exit 1; }
$docker import --change 'ENTRYPOINT ["/pause"]' "$pause_layer" localhost/krs/pause:1 >/dev/null
tags=()
for ref in "${wanted[@]}" "$sandbox"; do
  case "$ref" in
    */coredns*) $docker tag localhost/krs/coredns:1 "$ref" ;;
    */pause*) $docker tag localhost/krs/pause:1 "$ref" ;;
    *) $docker tag localhost/krs/kube-components:"$KUBERNETES_VERSION" "$ref" ;;
  esac
  tags+=("$ref")
done
$docker save "${tags[@]}" -o "$work/images.tar"
log "images: $(du -h "$work/images.tar" | cut -f1) for ${#tags[@]} tags"

# the node: import the tree, load the images into its containerd in a build container, commit
rm -rf "$comp" "$work/coredns"
tar -C "$tree" -c . | $docker import - localhost/krs/kind-base:"$KUBERNETES_VERSION" >/dev/null
rm -rf "$tree"
cid="$($docker run -d --privileged --entrypoint sleep localhost/krs/kind-base:"$KUBERNETES_VERSION" infinity)"
trap '$docker rm -f -v "$cid" >/dev/null 2>&1 || true' EXIT
$docker cp "$work/images.tar" "$cid:/images.tar"
$docker exec "$cid" bash -c 'nohup containerd >/var/log/containerd-build.log 2>&1 &'
# shellcheck disable=SC2016 # expanded by the build container's bash
$docker exec "$cid" bash -c 'for i in $(seq 50); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.2; done; ctr info >/dev/null'
$docker exec "$cid" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
  --all-platforms --no-unpack --digests /images.tar >&2
# shellcheck disable=SC2016
$docker exec "$cid" bash -c 'pkill containerd; for i in $(seq 50); do pgrep containerd >/dev/null || break; sleep 0.2; done; rm -f /images.tar /var/log/containerd-build.log'
# kind's base also sets STOPSIGNAL SIGRTMIN+3, which Docker 20.10's commit cannot change: `docker
# stop` of a node sends SIGTERM (kind deletes nodes with `docker rm -f`, so it does not matter)
$docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
  --change 'ENV container=docker' "$cid" "$image" >/dev/null
rm -f "$work/images.tar"
# the intermediate images live on in the node image's containerd store only
$docker rm -f -v "$cid" >/dev/null
$docker rmi localhost/krs/kind-base:"$KUBERNETES_VERSION" localhost/krs/kube-components:"$KUBERNETES_VERSION" \
  localhost/krs/coredns:1 localhost/krs/pause:1 "${tags[@]}" >/dev/null
log "built $image in $((SECONDS - start)) s, $($docker image inspect -f '{{.Size}}' "$image") bytes"
echo "$image"
