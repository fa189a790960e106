# keda-ray-scaler: every target runs inside .venv (made by `make install`).
SHELL   := /bin/bash
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: install deps-debian test test-ray-versions ray-venvs lint bench bench-quick bench-vs-ray proto lock demo e2e e2e-build e2e-local clean

install: deps-debian $(BIN)/keda-ray-scaler ## Debian packages, then a venv with the package, Ray, bench, dev and demo extras

$(BIN)/keda-ray-scaler: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[agent,bench,dev,demo]'
	touch $@

# Debian's prometheus package starts (and enables) a system-wide service on 9090, the scaler's
# own default port: a policy-rc.d that refuses service starts is in place during the install
# (only when the machine has none), and on a systemd host the unit is disabled and stopped.
# The real node's: the CNI plugins (bridge, host-local, loopback), debootstrap for the images'
# root filesystem, busybox-static for the node's smoke-test image, libseccomp-dev for runc's
# build (cgo), iproute2 and util-linux (unshare, nsenter) for the network namespace, iptables for
# the bed's kube-proxy (iptables-restore, nf_tables backend).
DEBIAN_PACKAGES := prometheus shellcheck containernetworking-plugins debootstrap busybox-static libseccomp-dev pkg-config iproute2 util-linux iptables

deps-debian: ## Debian packages the tests need: Prometheus (and promtool), shellcheck, the real node's; starts nothing
	dpkg -s $(DEBIAN_PACKAGES) >/dev/null 2>&1 || { \
	  apt-get update -qq; \
	  own_policy=; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; own_policy=1; }; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBIAN_PACKAGES); rc=$$?; \
	  [ -z "$$own_policy" ] || rm -f /usr/sbin/policy-rc.d; \
	  [ ! -d /run/systemd/system ] || systemctl disable --now prometheus >/dev/null 2>&1 || true; \
	  exit $$rc; }

# The suite runs inside a network namespace of its own (e2e/netns.sh: loopback and the real
# node's IP, no route out), where the real node's kubelet, containerd and pods live.
BED = KRS_E2E_BIN="$$(bash e2e/build.sh)" KRS_E2E_IMAGES="$$($(BIN)/python e2e/images.py)" bash e2e/netns.sh

# Test modules run side by side on TEST_WORKERS pytest-xdist workers, one module a worker at a
# time, the longest first (tests/conftest.py, tests/harness/xdist_modules.py); each worker has a
# network namespace of its own (tests/harness/worker_netns.py). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
XDIST = -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Every module that starts a real node (kubelet, containerd, Ray pods), and two that start a
# Ray cluster of processes under load, run in e2e-local only (one process, one after another),
# never in `make test` (CI): on CI's two cores a real node's Ray pods beside the other worker
# passed Ray's fixed 30 s raylet registration (ray/_private/node.py) and crash-looped, which made
# four CI runs in a row red (sessions 28-30: the KubeRay seed, the labels fixture, the fenced
# drain, the Deployment seed), and with them the suite took 1,187-1,944 s, over warm CI's 20
# minutes (docs/testing.md says what each takes and what CI still runs).
E2E_LOCAL_ONLY := \
  tests/real/node/test_real_node.py tests/real/control_plane/test_bed_networking.py \
  tests/real/control_plane/test_real_control_plane.py tests/real/control_plane/test_real_kuberay.py \
  tests/real/control_plane/test_real_labels.py tests/real/control_plane/test_real_rayjob.py \
  tests/real/control_plane/test_real_rayservice.py tests/real/control_plane/test_real_rayservice_upgrade.py \
  tests/real/node/test_real_faults.py tests/real/node/test_vs_ray.py \
  tests/real/ray/test_agent_drain.py tests/real/ray/test_e2e_local.py

test: install e2e-build ray-venvs ## the whole suite but E2E_LOCAL_ONLY: unit, property, real Ray, Prometheus, gRPC, control plane, KEDA, KubeRay's API
	$(BED) $(BIN)/pytest -q --durations=25 $(XDIST) $(addprefix --ignore=,$(E2E_LOCAL_ONLY)) $(PYTEST_ARGS)

e2e-build: ## build (or find cached) the test bed's binaries and images; prints build times
	bash e2e/build.sh >/dev/null
	$(BIN)/python e2e/images.py >/dev/null

# Ray from PyPI, one venv a version, outside the repository (~/.cache/keda-ray-scaler/ray-versions,
# about 25 s a version cold, nothing warm): made here, before the suite's network namespace,
# which has no route to PyPI. `make test` runs the oldest and the newest supported Ray
# (tests/real/ray/test_ray_versions.py); test-ray-versions runs every version of the matrix.
ray-venvs: ## the Ray venvs CI needs: the matrix's oldest and newest Ray, and the label test's 2.51
	$(PY) tools/ray_venvs.py

test-ray-versions: install ## the agent's read and drain against every Ray of the matrix, both autoscaler modes
	$(PY) tools/ray_venvs.py --all
	KRS_RAY_VERSIONS=all $(BIN)/pytest -q -rs --durations=0 tests/real/ray/test_ray_versions.py $(PYTEST_ARGS)

# One process: every module here starts a real node, and those run one after another anyway.
# Then `make e2e` (e2e/run.sh, kind: 6-8 minutes, more than warm CI's ~15 of 20 minutes leaves, so
# it runs here and not in CI), also when the tests failed; its e2e-kind line is sorted among
# theirs, and e2e-local fails when either part fails.
# KubeRay: the newest release, v1.7.0, where its Go module can be had (the Go module proxy here
# serves its .info and .mod but refuses its .zip; a module cache that holds it serves it), else
# build.sh's default, v1.5.1, which `make test` (CI) runs; the e2e-kuberay line names it.
E2E_LOCAL_KUBERAY ?= $(shell go mod download github.com/ray-project/kuberay/ray-operator@v1.7.0 >/dev/null 2>&1 && echo v1.7.0 || echo v1.5.1)
e2e-local: install e2e-build ## the real-node tests, then make e2e; end with their "e2e-faults:", "e2e-kind:", "e2e-kuberay:", "e2e-labels:", "e2e-local:", "e2e-node:", "e2e-rayjob:", "e2e-rayservice:", "e2e-rayservice-upgrade:" and "vs-ray:" lines
	@log=$$(mktemp); export KRS_KUBERAY_VERSION=$(E2E_LOCAL_KUBERAY); echo "e2e-local: KubeRay $$KRS_KUBERAY_VERSION"; \
	  $(BED) $(BIN)/pytest -q -n 0 $(E2E_LOCAL_ONLY) $(PYTEST_ARGS) | tee $$log; \
	  status=$${PIPESTATUS[0]}; bash e2e/run.sh | tee -a $$log; kind=$${PIPESTATUS[0]}; \
	  grep -E '^(e2e-(faults|kind|kuberay|labels|local|node|rayjob|rayservice|rayservice-upgrade)|vs-ray):' $$log | sort; \
	  rm -f $$log; ((status != 0)) && exit $$status; exit $$kind

lint: install
	$(BIN)/ruff check keda_ray_scaler tests bench
	$(BIN)/ruff format --check keda_ray_scaler tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: install ## benchmarks: print figures against the targets
	$(BIN)/python -m bench

bench-quick: install ## a smoke run of the benchmarks, under a minute (figures are not the reference)
	$(BIN)/python -m bench --quick

# Issue 16: the project's loop (KubeRay mode) and Ray 2.60's own autoscaler v2 (KubeRay's sidecar)
# on the same bed, each workload on a fresh RayCluster, at production settings and at the bed's
# fast ones (about an hour; KRS_VS_RAY_PROFILES / KRS_VS_RAY_WORKLOADS narrow it). Prints one
# table and a line beginning "vs-ray:"; never fails on the figures.
bench-vs-ray: install e2e-build ## side by side with Ray's own autoscaler on the real-node bed (docs/benchmarks.md)
	$(BED) $(BIN)/python -m bench vs_ray

proto: install ## regenerate keda_ray_scaler/rpc/_generated from protos/ (KEDA) and gcs/_generated from protos/ray/ (Ray)
	$(BIN)/python -m keda_ray_scaler.rpc.keda_protogen
	$(BIN)/python -m keda_ray_scaler.gcs.ray_protogen

lock: install ## refresh locks/ (hashed, uv pip compile) and the Dockerfile's base image digests (crane, skopeo or docker buildx)
	$(BIN)/python tools/lock.py

demo: install ## the local demo: no Kubernetes, no Prometheus
	$(BIN)/keda-ray-scaler demo

# kind from its Go module on a node image built here (e2e/kind/), the product deployed as the
# README says; the KubeRay operator of e2e-local. Without a Docker Engine (this sandbox) the bed
# starts its own in a private network namespace (e2e/run.sh says what differs there and why).
# Not in CI (6-8 minutes): e2e-local runs it after its tests.
e2e: install ## kind cluster end to end: KEDA, KubeRay, Prometheus, the chart, the seed scenario; ends with its "e2e-kind:" line
	KRS_KUBERAY_VERSION=$(E2E_LOCAL_KUBERAY) bash e2e/run.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
