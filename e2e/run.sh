#!/usr/bin/env bash
# make e2e: the product on a kind cluster, deployed as the README says, and the seed scenario.
#
#   1. inputs, cached outside the repository (~/.cache/keda-ray-scaler): KEDA, the KubeRay
#      operator, Helm and kind from their Go modules (e2e/build.sh); the Ray image
#      (e2e/images.py: Ray 2.60.0 on Debian's Python, shaped as rayproject/ray); Debian's
#      Prometheus; the kind node image (e2e/kind/node-image.sh: Kubernetes 1.37 from its Go
#      modules, nothing pulled from a registry);
#   2. the product's image: `docker build` of the Dockerfile (e2e/docker/build.py --once), its
#      size and `serve`'s start-up; KEDA's, KubeRay's and Prometheus's (e2e/kind/tools-image.sh);
#   3. `kind create cluster`, then `kind load docker-image` and `kind load image-archive`;
#   4. KEDA and KubeRay (CRDs and operators, from their modules' own config/), the scaler with
#      Helm (charts/keda-ray-scaler, namespace keda, TLS Secrets made with openssl), the
#      RayWorkerGroup CRD and manifests/kuberay/example (e2e/overlays/kuberay-example), then
#      Prometheus scraping the head's agent with the shipped job (e2e/kind/prometheus.py);
#   5. the seed scenario (e2e/kind/scenario.py): 10 pods, only drained victims deleted, back to
#      the floor. The last line: `e2e-kind: ...` with the figures.
# Everything it made goes on exit, also on failure or Ctrl-C: the cluster, and the bed's own
# Docker Engine with its network namespace when it started one; a run after a failed one starts
# clean (it deletes a cluster of the same name left behind first). KEEP=1 keeps the cluster (and
# the engine) for a look: stop them with `e2e/run.sh --down`.
# Needs root (e2e/images.py chroots), Go, kubectl, openssl, debootstrap and, for the bed's own
# engine, Debian's docker.io (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=krs-kind
KEEP=${KEEP:-0}
export KRS_KUBERAY_VERSION=${KRS_KUBERAY_VERSION:-v1.5.1}
# shellcheck source=e2e/versions.env
source e2e/versions.env
DOCKER=${DOCKER:-docker}
log() { printf '%s e2e: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# --- the one place for this sandbox ---------------------------------------------------------
# A machine with a Docker Engine (Docker Desktop, a Linux dockerd) runs everything below against
# it, unchanged. This sandbox has none, so the bed brings its own (e2e/docker/engine.sh: Debian's
# dockerd, its data in ~/.cache), and the run moves into a private network namespace
# (e2e/netns.sh: dockerd's bridge and iptables rules stay there; nothing routes out, so every
# image is built or imported here). Three more adaptations exist for this sandbox alone, each
# where it acts and each taken only when its condition holds here:
#   - root lacks CAP_SYS_RESOURCE: dockerd runs containers through e2e/docker/krs-runc (which
#     drops that capability from `--privileged` and caps rlimits), and the node image's systemd
#     units keep the node's limits (e2e/kind/node-image.sh);
#   - the host is cgroup v1: the kubelet's failCgroupV1: false (e2e/kind/cluster.yaml; no effect
#     on a cgroup v2 host);
#   - no registry: the base image of the Dockerfile and the pip index are given to `docker build`
#     locally (e2e/docker/build.py), as the node image's and the other images' contents are.
own_engine() { ! $DOCKER info >/dev/null 2>&1; }

down() {
  if command -v kind >/dev/null || [[ -n ${KIND:-} ]]; then
    "${KIND:-kind}" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  if [[ ${KRS_E2E_OWN_ENGINE:-} == 1 ]]; then
    bash e2e/docker/engine.sh stop || true
  fi
}

if [[ ${1:-} == --down ]]; then
  KRS_E2E_OWN_ENGINE=1 down
  exit 0
fi

if [[ ${1:-} != --inner ]]; then
  t=$SECONDS
  log "inputs (cached after the first run)"
  KRS_E2E_SET="$(bash e2e/build.sh | tail -1)"
  KRS_E2E_IMAGES="$(.venv/bin/python e2e/images.py pause ray | tail -1)"
  export KRS_E2E_SET KRS_E2E_IMAGES KRS_E2E_INPUTS_S=$((SECONDS - t))
  if own_engine; then
    # A dockerd left by a killed run, in a namespace that is gone: stopped before a new one
    bash e2e/docker/engine.sh stop
    bash e2e/docker/engine.sh install
    .venv/bin/python e2e/docker/build.py --prepare
    bash e2e/kind/node-image.sh --prepare # what needs the network: not in the namespace
    log "no Docker Engine answers: the bed's own, in a private network namespace"
    KRS_E2E_OWN_ENGINE=1 exec bash e2e/netns.sh bash e2e/run.sh --inner
  fi
  exec bash e2e/run.sh --inner
fi

# --- inside: the engine, the cluster, the deployment, the scenario ---------------------------
KIND="$KRS_E2E_SET/bin/kind"
HELM="$KRS_E2E_SET/bin/helm"
WORK="$(mktemp -d /tmp/krs-e2e-kind.XXXXXX)"
export KUBECONFIG="$WORK/kubeconfig"
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if ((status != 0)) && [[ -s $KUBECONFIG ]]; then
    log "FAILED ($status): the cluster's state"
    kubectl get pods -A -o wide >&2 || true
    kubectl -n ray get raycluster,rayworkergroups,scaledobjects,hpa >&2 || true
    kubectl -n ray logs -l ray.io/node-type=head -c agent --tail=30 >&2 || true
    kubectl -n keda logs deploy/keda-ray-scaler --tail=20 >&2 || true
  fi
  if [[ $KEEP == 1 ]]; then
    log "KEEP=1: cluster $CLUSTER kept (KUBECONFIG=$KUBECONFIG); e2e/run.sh --down removes it"
  else
    log "cleaning up"
    down
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ ${KRS_E2E_OWN_ENGINE:-} == 1 ]]; then
  DOCKER=/usr/bin/docker # the engine's own client (Docker 20.10), see engine.sh
  export DOCKER_HOST
  DOCKER_HOST="$(bash e2e/docker/engine.sh start | tail -1)"
  DOCKER_HOST=${DOCKER_HOST#DOCKER_HOST=}
  # kind runs `docker`: the engine's own first on PATH
  mkdir -p "$WORK/bin" && ln -s /usr/bin/docker "$WORK/bin/docker" && export PATH="$WORK/bin:$PATH"
fi
"$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true # a failed run's

log "images"
t=$SECONDS
node_image="localhost/krs/kind-node:$KUBERNETES_VERSION"
if ! $DOCKER image inspect "$node_image" >/dev/null 2>&1; then
  bash e2e/kind/node-image.sh >/dev/null
fi
if [[ ${KRS_E2E_OWN_ENGINE:-} == 1 ]]; then
  .venv/bin/python e2e/docker/build.py --once --tag keda-ray-scaler:e2e >&2
else
  $DOCKER build -t keda-ray-scaler:e2e . >&2
fi
# The image's size, and its start-up: `docker run` of `serve` (read-only root, as the chart runs
# it) to its "scaler serving" log line, which it writes once its health is SERVING
image_mb=$(($($DOCKER image inspect -f '{{.Size}}' keda-ray-scaler:e2e) / 1000000))
serve_start_s() {
  local t0 t1 name=krs-e2e-serve-start
  $DOCKER rm -f "$name" >/dev/null 2>&1 || true
  t0=$(date +%s%N)
  timeout 60 grep -q -m1 'scaler serving' < <($DOCKER run --rm --name "$name" --read-only \
    --tmpfs /tmp keda-ray-scaler:e2e serve --health-port 9091 --prometheus-url http://127.0.0.1:9 2>&1) ||
    { log "serve did not start in 60 s"; $DOCKER rm -f "$name" >/dev/null 2>&1; return 1; }
  t1=$(date +%s%N)
  $DOCKER rm -f "$name" >/dev/null 2>&1 || true
  printf '%d.%02d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 10000000 % 100))
}
serve_s="$(serve_start_s)"
log "keda-ray-scaler:e2e: $image_mb MB; docker run to serving $serve_s s"
mapfile -t tools < <(bash e2e/kind/tools-image.sh "$KRS_E2E_SET")
ray_archive="$(.venv/bin/python -c 'import json, sys; print(json.load(open(sys.argv[1]))["ray"]["archive"])' "$KRS_E2E_IMAGES/images.json")"
images_s=$((SECONDS - t))

log "kind create cluster ($node_image)"
t=$SECONDS
# once more if kubeadm fails: on a loaded 2-core machine its API server restarts under it at times
# ("could not bootstrap the admin user ... connection refused")
for attempt in 1 2; do
  "$KIND" create cluster --name "$CLUSTER" --config e2e/kind/cluster.yaml --image "$node_image" \
    --wait 180s >&2 && break
  ((attempt < 2)) || exit 1
  log "kind create cluster failed; deleting it and trying once more"
  "$KIND" delete cluster --name "$CLUSTER" >&2
done
create_s=$((SECONDS - t))

log "kind load"
t=$SECONDS
"$KIND" load docker-image --name "$CLUSTER" keda-ray-scaler:e2e "${tools[@]}" >&2
"$KIND" load image-archive --name "$CLUSTER" "$ray_archive" >&2
load_s=$((SECONDS - t))

# kustomize_from DIR SRC: DIR/kustomization.yaml's resources are SRC's config/ dirs given after
# it (kustomize takes relative paths only); the rest of the file comes on stdin.
kustomize_from() {
  local dir=$1 src=$2 rel
  shift 2
  mkdir -p "$dir"
  rel="$(realpath --relative-to="$dir" "$src")"
  {
    printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n'
    for r in "$@"; do printf '  - %s\n' "${r/#@/$rel/}"; done
    cat
  } >"$dir/kustomization.yaml"
}

log "KEDA $KEDA_VERSION (its config/, without the admission webhooks: not built here)"
t=$SECONDS
src="$(dirname "$KRS_E2E_SET")/src"
kustomize_from "$WORK/keda" "$src/keda-$KEDA_VERSION/config" @crd @general @rbac @manager @metrics-server @service_account <<EOF
images:
  - {name: ghcr.io/kedacore/keda, newName: localhost/krs/keda, newTag: $KEDA_VERSION}
  - {name: ghcr.io/kedacore/keda-metrics-apiserver, newName: localhost/krs/keda, newTag: $KEDA_VERSION}
patches:
  - target: {kind: Deployment, name: keda-operator}
    patch: |
      - {op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: IfNotPresent}
      - {op: add, path: /spec/template/spec/containers/0/args/-, value: --enable-webhook-patching=false}
  - target: {kind: Deployment, name: keda-metrics-apiserver}
    patch: |
      - {op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: IfNotPresent}
EOF
kubectl apply --server-side -k "$WORK/keda" >/dev/null

log "KubeRay $KRS_KUBERAY_VERSION (its config/default)"
# The bed's operator settings (tests/harness/bed.py OPERATOR_ENV): no probes injected (they run
# wget, which the Ray image lacks), no init container (a `ray health-check` the head's token
# authentication refuses without the token)
mkdir -p "$WORK/kuberay"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kuberay-system\n' >"$WORK/kuberay/namespace.yaml"
kustomize_from "$WORK/kuberay" "$src/kuberay-$KRS_KUBERAY_VERSION/config" namespace.yaml @default <<EOF
namespace: kuberay-system
images:
  - {name: quay.io/kuberay/operator, newName: localhost/krs/kuberay-operator, newTag: $KRS_KUBERAY_VERSION}
patches:
  - target: {kind: Deployment, name: kuberay-operator}
    patch: |
      - {op: add, path: /spec/template/spec/containers/0/env, value: [{name: ENABLE_INIT_CONTAINER_INJECTION, value: "false"}, {name: ENABLE_PROBES_INJECTION, value: "false"}]}
EOF
kubectl apply --server-side -k "$WORK/kuberay" >/dev/null
kubectl -n keda rollout status deploy/keda-operator deploy/keda-metrics-apiserver --timeout=300s >&2
kubectl -n kuberay-system rollout status deploy/kuberay-operator --timeout=300s >&2

log "TLS Secrets (by hand, as docs/getting-started.md says without cert-manager)"
host="keda-ray-scaler.keda.svc.cluster.local"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=keda-ray-scaler e2e CA" \
  -keyout "$WORK/ca.key" -out "$WORK/ca.crt" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:*.%s\nextendedKeyUsage=serverAuth\n' "$host" "$host" >"$WORK/server.ext"
printf 'extendedKeyUsage=clientAuth\n' >"$WORK/client.ext"
for who in server client; do
  cn=keda-ray-scaler-server
  [[ $who == client ]] && cn=keda # the one client the scaler serves (serve --client-identity)
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$cn" -keyout "$WORK/$who.key" -out "$WORK/$who.csr" 2>/dev/null
  openssl x509 -req -in "$WORK/$who.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" \
    -CAcreateserial -days 2 -extfile "$WORK/$who.ext" -out "$WORK/$who.crt" 2>/dev/null
done
kubectl -n keda create secret generic keda-ray-scaler-tls --from-file=tls.crt="$WORK/server.crt" \
  --from-file=tls.key="$WORK/server.key" --from-file=ca.crt="$WORK/ca.crt" >/dev/null
kubectl -n keda create secret generic keda-ray-scaler-client-tls --from-file=tls.crt="$WORK/client.crt" \
  --from-file=tls.key="$WORK/client.key" --from-file=ca.crt="$WORK/ca.crt" >/dev/null

log "the scaler (helm upgrade --install, as the README)"
"$HELM" upgrade --install keda-ray-scaler charts/keda-ray-scaler --namespace keda \
  --set prometheus.url=http://prometheus-server.monitoring.svc:80 \
  --set clusterTriggerAuthentication.create=true \
  --set image.repository=keda-ray-scaler --set image.tag=e2e \
  --set replicas=1 --set refreshIntervalSeconds=1 --wait --timeout 5m >/dev/null

log "the RayWorkerGroup CRD and the KubeRay example (e2e/overlays/kuberay-example)"
kubectl apply -k manifests/kuberay/crd >/dev/null
kubectl apply --server-side -k e2e/overlays/kuberay-example >/dev/null
head_ready() {
  kubectl -n ray wait pod -l ray.io/cluster=demo,ray.io/node-type=head --for=condition=Ready --timeout=10s >/dev/null 2>&1
}
for _ in $(seq 60); do head_ready && break; sleep 5; done
head_ready || { log "the head pod is not Ready"; exit 1; }

log "Prometheus (Debian's, the shipped job; e2e/kind/prometheus.py)"
read -r head_ip head_pod < <(kubectl -n ray get pod -l ray.io/cluster=demo,ray.io/node-type=head \
  -o jsonpath='{.items[0].status.podIP} {.items[0].metadata.name}{"\n"}')
.venv/bin/python e2e/kind/prometheus.py localhost/krs/prometheus:debian "$head_ip" "$head_pod" |
  kubectl apply -f - >/dev/null
kubectl -n monitoring rollout status deploy/prometheus-server --timeout=180s >&2
deploy_s=$((SECONDS - t))

log "the seed scenario (e2e/kind/scenario.py)"
t=$SECONDS
line="$(.venv/bin/python e2e/kind/scenario.py)"
scenario_s=$((SECONDS - t))
log "PASS"
echo "${line}; image ${image_mb} MB, docker run to serving ${serve_s} s; inputs ${KRS_E2E_INPUTS_S:-0} s, images ${images_s} s, cluster create ${create_s} s, kind load ${load_s} s, deploy ${deploy_s} s, scenario ${scenario_s} s"
