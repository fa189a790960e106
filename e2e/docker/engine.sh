#!/usr/bin/env bash
# A Docker Engine of the test bed's own: Debian's dockerd (docker.io), its data root, exec root,
# socket, pid file and log in one directory outside the repository, stopped by its PID.
#
#   e2e/docker/engine.sh install   apt-get install docker.io unless dockerd is there (network)
#   e2e/docker/engine.sh start     start dockerd unless it runs; last line DOCKER_HOST=unix://...
#   e2e/docker/engine.sh stop      SIGTERM to dockerd (it stops its containers and containerd),
#                                  SIGKILL after 60 s; then its containerd by PID if it is left
#   e2e/docker/engine.sh host      print DOCKER_HOST=unix://... (running or not)
#
# dockerd runs in the caller's network namespace and adds its bridge and iptables rules there:
# `start` refuses a namespace with a default route (the host's). Run it under e2e/netns.sh, as the
# test bed runs everything; the namespace then has no route out, so images come from local
# tarballs (e2e/docker/build.py), never a registry. Use the engine's own client, /usr/bin/docker
# (Docker 20.10): a newer CLI first on PATH wants BuildKit's buildx.
# Environment: KRS_DOCKER_DIR (default ~/.cache/keda-ray-scaler/docker of KRS_REAL_HOME or HOME).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
home="${KRS_REAL_HOME:-$HOME}"
dir="${KRS_DOCKER_DIR:-$home/.cache/keda-ray-scaler/docker}"
pidfile="$dir/dockerd.pid"
socket="$dir/docker.sock"
log() { echo "engine.sh: $*" >&2; }

running() { [[ -s $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

answers() { DOCKER_HOST="unix://$socket" /usr/bin/docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

cmd_install() {
  command -v dockerd >/dev/null && return
  log "installing docker.io (Debian's Docker Engine)"
  apt-get update -qq
  # no daemon started by the package: policy-rc.d as the Makefile's deps-debian does
  local own_policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io || rc=$?
  [[ -z $own_policy ]] || rm -f /usr/sbin/policy-rc.d
  return $rc
}

# A default route here: IPv4's, or an IPv6 ::/0 that is not a reject route (RTF_REJECT 0x200;
# a new namespace has those on lo). The init process's namespace cannot be named: its links in
# /proc/1/ns are unreadable to a root that lacks one of its capabilities, as here.
route_out() {
  awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { found = 1 } END { exit !found }' \
    /proc/net/route && return 0
  local dest plen flags
  while read -r dest plen _ _ _ _ _ _ flags _; do
    [[ $dest == 00000000000000000000000000000000 && $plen == 00 ]] &&
      (((16#$flags & 16#200) == 0)) && return 0
  done </proc/net/ipv6_route
  return 1
}

# CAP_SYS_RESOURCE (bit 24) is not in this process's bounding set: the sandbox lacks it.
lacks_sys_resource() {
  local bnd
  bnd="$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)"
  (((16#$bnd >> 24 & 1) == 0))
}

cmd_start() {
  command -v dockerd >/dev/null || {
    log "dockerd is missing: run 'e2e/docker/engine.sh install' first (outside the namespace)"
    exit 2
  }
  if route_out; then
    log "refusing a network namespace with a default route (the host's?): run me under e2e/netns.sh"
    exit 2
  fi
  if running; then
    local pid
    pid="$(cat "$pidfile")"
    if [[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ]]; then
      log "dockerd $pid runs in another network namespace: stop it first (engine.sh stop)"
      exit 2
    fi
    log "dockerd $pid already running"
    echo "DOCKER_HOST=unix://$socket"
    return
  fi
  mkdir -p "$dir/data" "$dir/exec"
  rm -f "$pidfile" "$socket"
  local args=(--data-root "$dir/data" --exec-root "$dir/exec" --host "unix://$socket"
    --pidfile "$pidfile")
  # The sandbox adaptation, and the only one: this machine's root lacks CAP_SYS_RESOURCE, so runc
  # cannot give a container every capability (`docker run --privileged`, which kind uses), raise
  # an rlimit or lower an OOM score. krs-runc edits each container's config.json (and a `docker
  # exec`'s process.json) down to what this process may grant, then runs runc. A user's machine
  # has the capability and runs Docker's own runc: this branch is not taken there.
  if lacks_sys_resource; then
    args+=(--add-runtime "krs-runc=$here/krs-runc" --default-runtime krs-runc)
    log "CAP_SYS_RESOURCE is missing here: containers run through $here/krs-runc"
  fi
  log "starting dockerd in $dir (log: $dir/dockerd.log)"
  local t=$SECONDS
  # setsid: dockerd leads its own session, a Ctrl-C of the caller does not reach it
  setsid dockerd "${args[@]}" >"$dir/dockerd.log" 2>&1 </dev/null &
  local pid=$!
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "dockerd exited; the end of its log:"
      tail -20 "$dir/dockerd.log" >&2
      exit 1
    fi
    if ((SECONDS - t > 60)); then
      log "dockerd did not answer within 60 s; stopping it"
      cmd_stop
      exit 1
    fi
    sleep 0.2
  done
  log "dockerd $(cat "$pidfile") ready in $((SECONDS - t)) s"
  echo "DOCKER_HOST=unix://$socket"
}

# wait_gone PID SECONDS: true once PID has exited.
wait_gone() {
  local pid=$1 deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

cmd_stop() {
  local containerd_pid=""
  [[ -s $dir/exec/containerd/containerd.pid ]] && containerd_pid="$(cat "$dir/exec/containerd/containerd.pid")"
  if running; then
    local pid t=$SECONDS
    pid="$(cat "$pidfile")"
    kill -TERM "$pid"
    if ! wait_gone "$pid" 60; then
      log "dockerd $pid still running after 60 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 10 || true
    fi
    log "dockerd $pid stopped in $((SECONDS - t)) s"
  fi
  if [[ -n $containerd_pid ]] && kill -0 "$containerd_pid" 2>/dev/null &&
    grep -qa containerd "/proc/$containerd_pid/cmdline"; then
    log "dockerd's containerd $containerd_pid is left: SIGTERM"
    kill -TERM "$containerd_pid" 2>/dev/null || true
    wait_gone "$containerd_pid" 20 || kill -KILL "$containerd_pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  # dockerd leaves its namespace's bind mount (exec/netns/default), which would keep the network
  # namespace alive after its last process; anything else a killed dockerd left goes too
  local point
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r point; do
    umount "$point" 2>/dev/null || umount --lazy "$point"
  done
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  host) echo "DOCKER_HOST=unix://$socket" ;;
  *)
    echo "usage: e2e/docker/engine.sh install|start|stop|host" >&2
    exit 2
    ;;
esac
