#!/usr/bin/env bash
# Run CMD in a fresh network namespace that holds only the real node's network:
#
#   e2e/netns.sh CMD [ARG...]      (needs root)
#
# `unshare --net` makes the namespace (network only: `ip netns exec` would also unshare the mount
# namespace and remount /sys, which hides the cgroups from the kubelet and runc); `lo` comes up
# with 127.0.0.1/8 and the node IP 10.200.0.1/32 (the kubelet refuses a loopback node IP). There
# is no other interface and no route out: CMD and every process it starts (API server, kubelet,
# containerd, pods on the bridge the CNI plugin adds) reach one another and nothing else, and no
# port they open is seen outside. The namespace goes away with its last process.
set -euo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: e2e/netns.sh CMD [ARG...]" >&2
  exit 2
fi
exec unshare --net -- bash -euo pipefail -c '
  ip link set lo up
  ip addr add 10.200.0.1/32 dev lo
  exec "$@"
' netns.sh "$@"
