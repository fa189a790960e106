#!/usr/bin/env bash
# End to end on kind (needs a Docker engine, kind, kubectl, helm, openssl):
#   1. a kind cluster; KEDA and Prometheus from their Helm charts
#   2. the image built (Dockerfile), Ray's pulled, both loaded into kind; mTLS certificates made with openssl
#   3. the scaler (e2e/overlays/scaler) and the example Ray cluster (e2e/overlays/ray-cluster)
#   4. 20 Ray tasks of {CPU: 5} (e2e/work.py): the cpu group must reach 10 running pods
#   5. 16 tasks end, 4 keep running: after the idle timeout exactly the idle pods are removed
#      and every busy pod is still there; no wrong victim is counted
#   6. the driver stops: the group goes back to 0
# Environment: CLUSTER, KIND_NODE_IMAGE, KEDA_CHART_VERSION, RAY_IMAGE, KEEP=1 keeps the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER=${CLUSTER:-keda-ray-scaler}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-kindest/node:v1.34.0}
KEDA_CHART_VERSION=${KEDA_CHART_VERSION:-2.18.0}
RAY_IMAGE=${RAY_IMAGE:-rayproject/ray:2.60.0-py311}
KEEP=${KEEP:-0}
NS=ray
SCALER_NS=keda
GROUP=cpu
EXPECTED_PODS=10
SHORT_S=45
SCALE_UP_TIMEOUT_S=420
SCALE_DOWN_TIMEOUT_S=420
WORK=$(mktemp -d)

log() { printf '%s e2e: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
need() { command -v "$1" >/dev/null || { echo "e2e: $1 is required" >&2; exit 2; }; }

dump() {
  kubectl get pods -A -o wide || true
  kubectl -n "$NS" get scaledobjects,hpa -o wide || true
  kubectl -n "$NS" describe scaledobject "ray-demo-$GROUP" | tail -30 || true
  kubectl -n "$SCALER_NS" logs -l app.kubernetes.io/component=scaler --tail=50 || true
  kubectl -n "$NS" logs deploy/ray-demo-head -c agent --tail=80 || true
}

die() { log "FAIL: $*"; dump; exit 1; }

cleanup() {
  rm -rf "$WORK"
  if [[ $KEEP != 1 ]]; then kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# wait_for TIMEOUT_S WHAT COMMAND...: run COMMAND every 5 s until it succeeds.
wait_for() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    ((SECONDS < deadline)) || die "timed out after ${timeout}s waiting for $what"
    sleep 5
  done
}

replicas() { kubectl -n "$NS" get deploy "ray-demo-$GROUP" -o jsonpath='{.spec.replicas}'; }

# Running pods of the group that are not being deleted (a terminating pod has a 2nd field).
running_pods() {
  kubectl -n "$NS" get pods -l "ray.io/group=$GROUP" --field-selector=status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' |
    awk 'NF == 1 { print $1 }' | sort
}

head_exec() { kubectl -n "$NS" exec deploy/ray-demo-head -c "$1" -- "${@:2}"; }

agent_metrics() {
  head_exec agent python -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9400/metrics", timeout=5).read().decode())'
}

# Pods whose Ray node has CPU in use, from the agent's own export.
busy_pods() {
  agent_metrics | awk '/^ray_scaler_node_resource_available\{/ && /resource="CPU"/ && $NF + 0 < 10 {
    if (match($0, /pod="[^"]+"/)) print substr($0, RSTART + 5, RLENGTH - 6) }' | sort
}

tasks_done() {
  local n
  n=$(head_exec ray-head sh -c 'grep -c "^task done" /tmp/work.log || true')
  ((n >= $1))
}

for tool in docker kind kubectl helm openssl; do need "$tool"; done

log "kind cluster $CLUSTER ($KIND_NODE_IMAGE)"
if ! kind get clusters | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --config e2e/kind.yaml --image "$KIND_NODE_IMAGE" --wait 120s
fi
kubectl config use-context "kind-$CLUSTER" >/dev/null

log "images"
# one product image, both commands (serve; agent, the head's sidecar); Ray's own for Ray's pods
docker build --target scaler -t keda-ray-scaler:e2e .
docker pull "$RAY_IMAGE"
docker tag "$RAY_IMAGE" krs-ray:e2e
kind load docker-image --name "$CLUSTER" keda-ray-scaler:e2e krs-ray:e2e

log "KEDA $KEDA_CHART_VERSION and Prometheus"
helm repo add kedacore https://kedacore.github.io/charts --force-update >/dev/null
helm repo add prometheus-community https://prometheus-community.github.io/helm-charts --force-update >/dev/null
helm upgrade --install keda kedacore/keda --namespace keda --create-namespace \
  --version "$KEDA_CHART_VERSION" --wait --timeout 5m
helm upgrade --install prometheus prometheus-community/prometheus --namespace monitoring \
  --create-namespace --values e2e/prometheus-values.yaml --wait --timeout 5m

log "mTLS certificates"
host="keda-ray-scaler.$SCALER_NS.svc.cluster.local"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=keda-ray-scaler e2e CA" \
  -keyout "$WORK/ca.key" -out "$WORK/ca.crt" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:*.%s\nextendedKeyUsage=serverAuth\n' "$host" "$host" >"$WORK/server.ext"
printf 'extendedKeyUsage=clientAuth\n' >"$WORK/client.ext"
for who in server client; do
  cn=keda-ray-scaler-server
  [ "$who" = client ] && cn=keda  # the one client the scaler serves (serve --client-identity)
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$cn" \
    -keyout "$WORK/$who.key" -out "$WORK/$who.csr" 2>/dev/null
  openssl x509 -req -in "$WORK/$who.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" \
    -CAcreateserial -days 2 -extfile "$WORK/$who.ext" -out "$WORK/$who.crt" 2>/dev/null
done
for ns in "$SCALER_NS" "$NS"; do
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
done
kubectl -n "$SCALER_NS" create secret generic keda-ray-scaler-tls --dry-run=client -o yaml \
  --from-file=tls.crt="$WORK/server.crt" --from-file=tls.key="$WORK/server.key" \
  --from-file=ca.crt="$WORK/ca.crt" | kubectl apply -f - >/dev/null
# KEDA's client key in KEDA's namespace only (manifests/keda: a ClusterTriggerAuthentication)
kubectl -n keda create secret generic keda-ray-scaler-client-tls --dry-run=client -o yaml \
  --from-file=tls.crt="$WORK/client.crt" --from-file=tls.key="$WORK/client.key" \
  --from-file=ca.crt="$WORK/ca.crt" | kubectl apply -f - >/dev/null
kubectl apply -k manifests/keda
# Ray's token (token authentication is on in the example): the Secret named after the cluster
kubectl -n "$NS" create secret generic demo --dry-run=client -o yaml \
  --from-literal=auth_token="$(openssl rand -hex 32)" | kubectl apply -f - >/dev/null

log "scaler"
kubectl apply -k e2e/overlays/scaler
kubectl -n "$SCALER_NS" rollout status deploy/keda-ray-scaler --timeout=180s

log "Ray cluster"
kubectl apply -k e2e/overlays/ray-cluster
kubectl -n "$NS" rollout status deploy/ray-demo-head --timeout=300s
wait_for 120 "the agent's metrics" agent_metrics >/dev/null
[[ $(replicas) == 0 ]] || die "cpu group starts at $(replicas) pods, expected 0 (minReplicas 0, no demand)"

log "submit 20 tasks of {CPU: 5}"
head_exec ray-head sh -c 'cat > /tmp/work.py' <e2e/work.py
head_exec ray-head sh -c "SHORT=16 SHORT_S=$SHORT_S LONG_S=1800 nohup python /tmp/work.py \
  >/tmp/work.log 2>&1 & echo \$! >/tmp/work.pid"

log "scale-up: expect exactly $EXPECTED_PODS pods"
max_seen=0
scaled_up() {
  local r
  r=$(replicas)
  if ((r > max_seen)); then max_seen=$r; fi
  ((r == EXPECTED_PODS)) && [[ $(running_pods | wc -l) -eq $EXPECTED_PODS ]]
}
wait_for "$SCALE_UP_TIMEOUT_S" "$EXPECTED_PODS running pods" scaled_up
log "cpu group at $(replicas) replicas, $(running_pods | wc -l) running"
for _ in 1 2 3 4 5 6; do
  sleep 5
  r=$(replicas)
  if ((r > max_seen)); then max_seen=$r; fi
done
((max_seen >= EXPECTED_PODS)) || die "replicas reached only $max_seen, expected $EXPECTED_PODS"
if ((max_seen > EXPECTED_PODS)); then
  # Ray can report a task as pending and its node as used for a moment (two raylets' reports
  # race); the extra pod goes idle and is removed through the victim protocol like any other.
  log "note: a transient target of $max_seen was seen"
fi
running_pods >"$WORK/peak"

log "wait for the 16 short tasks to end"
wait_for $((SHORT_S + 240)) "16 finished tasks" tasks_done 16
# The agent polls Ray every few seconds: take the busy set once two reads 10 s apart agree.
stable_busy() {
  busy_pods >"$WORK/busy.1"
  sleep 10
  busy_pods >"$WORK/busy"
  cmp -s "$WORK/busy.1" "$WORK/busy" && [[ -s $WORK/busy ]]
}
wait_for 60 "a stable busy set" stable_busy
comm -23 "$WORK/peak" "$WORK/busy" >"$WORK/idle"
log "busy pods: $(tr '\n' ' ' <"$WORK/busy"); idle pods: $(wc -l <"$WORK/idle")"

log "idle scale-down: expect exactly the idle pods removed"
busy_count=$(wc -l <"$WORK/busy")
scaled_down() {
  [[ $(replicas) -eq $busy_count ]] && [[ $(running_pods | wc -l) -eq $busy_count ]]
}
wait_for "$SCALE_DOWN_TIMEOUT_S" "$busy_count pods" scaled_down
running_pods >"$WORK/left"
cmp -s "$WORK/left" "$WORK/busy" || die "pods left: $(tr '\n' ' ' <"$WORK/left"), busy were: $(tr '\n' ' ' <"$WORK/busy")"
wrong=$(agent_metrics | awk '/^ray_scaler_wrong_victims_total\{/ && $NF + 0 != 0' || true)
[[ -z $wrong ]] || die "wrong victims counted: $wrong"
log "only idle pods were removed; $busy_count busy pods kept"

log "stop the driver: the group goes back to 0"
# shellcheck disable=SC2016 # expanded by the pod's shell
head_exec ray-head sh -c 'kill "$(cat /tmp/work.pid)"'
no_pods() { [[ $(replicas) -eq 0 ]]; }
wait_for "$SCALE_DOWN_TIMEOUT_S" "0 pods" no_pods

log "PASS"
