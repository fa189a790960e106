"""One real node for the test control plane: the kubelet, containerd v2 and runc, real containers.

Recipe and measurements: ``shared/notes/real-node.md``. The kubelet is the ``controlplane``
binary's ``kubelet`` subcommand (Kubernetes v1.37.2); containerd v2.4.2 (``containerd``, ``ctr``,
``containerd-shim-runc-v2``) and runc v1.5.2 come from the same build set (``e2e/build.sh``); the
CNI plugins are Debian's (``/usr/lib/cni``); the images are OCI archives from ``e2e/images.py``,
imported into containerd's ``k8s.io`` namespace (nothing is ever pulled).

Usage, with the whole test process inside the network namespace of ``e2e/netns.sh``::

    with ControlPlane.start(workdir, bin_dir, kwok=False) as cp:
        with real_node(cp, bin_dir, images_json) as node:
            cp.apply_docs([{"apiVersion": "v1", "kind": "Pod", ..., "spec": node.pin(spec)}])

Network: the kubelet refuses a loopback node IP, so the node IP is ``10.200.0.1/32`` on the
``lo`` of a private network namespace (``NODE_IP``; ``in_node_netns()`` tells whether we run in
one). Pods get ``10.201.0.0/24`` on the bridge ``rn-cni0`` with routes to the node IP and to the
Service range (``SERVICE_CIDR``); the namespace has no route out, so no pod (and no test process)
can reach anything beyond it. Pods resolve names through the cluster DNS on the node IP
(``clusterDNS``, ``clusterDomain: cluster.local``) and reach ClusterIPs: CoreDNS and kube-proxy
run beside the node when the bed (``tests/harness/bed.py``) starts them
(``tests/harness/service_network.py``); a node started alone has neither, and its pods' lookups
fail at once (nothing listens on the node IP's port 53).

What the node is:

- registered as ``name`` with the label ``keda-ray-scaler.io/node=real`` and the taint
  ``keda-ray-scaler.io/node=real:NoSchedule`` (``NODE_LABEL``, ``NODE_TAINT``), so no pod lands
  on it unless pinned (``RealNode.pin`` adds the nodeSelector and the toleration): beside kwok's
  fake nodes, the real one runs only the pods a test means it to run;
- the kubelet serves on ``10.200.0.1:10250`` with a certificate of the cluster CA; it accepts
  client certificates of that CA (the API server's, for logs and exec) and authorizes them all
  (``AlwaysAllow``): a test cluster in a private network namespace;
- cgroup v1 is accepted (``failCgroupV1: false``), cgroupfs driver, the pods' cgroups under a
  root of their own (``/krs-<name>-<pid>`` in every hierarchy), so this kubelet never sees, and
  never cleans up, the cgroups of another kubelet on the machine; image GC never runs (thresholds
  100/99 %: the images are imported, not pullable); hard eviction at 1 % free disk, 100Mi memory;
- **the crash-loop back-off is capped at** ``CRASH_LOOP_MAX_S`` **= 5 s**
  (``crashLoopBackOff.maxContainerRestartPeriod``; feature gate ``KubeletCrashLoopBackOffMax``,
  beta and on by default since 1.35, set explicitly here). Tests wait on restarts: with the
  default the back-off doubles from 10 s to 300 s, so the third crash of a container waits 40 s
  and a crash-loop test takes minutes; capped, every restart after the first (which is
  immediate) waits 5 s, plus the pod worker's jitter (up to x1.5). A cap below the initial 10 s
  also lowers the initial step to the cap (``newCrashLoopBackOff``, ``pkg/kubelet/kubelet.go``).

On exit the node is cordoned, every pod bound to it deleted (grace ``teardown_grace_s``), and the
kubelet given the time to stop them itself (StopPodSandbox: CNI DEL, unmounts); then the kubelet
stops, the tasks left in containerd are killed through ``ctr``, containerd stops, shims of this
containerd (matched by their ``-address``) and processes left in this node's cgroups are
SIGKILLed by PID, the cgroups removed, everything mounted under the state directory unmounted,
the kubelet's log symlinks in ``/var/log/containers`` removed, the containerd root (images and
snapshots) deleted and the Node object deleted. Logs and configuration stay in the state
directory. A leak (a mount or a process that would not go) fails the exit.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from control_plane import (
    REPO,
    SERVICE_CIDR,
    ControlPlane,
    Process,
    spawn,
    wait_until,
    write_kubeconfig,
)

NODE_IP = "10.200.0.1"
POD_SUBNET = "10.201.0.0/24"
POD_GATEWAY = "10.201.0.1"
BRIDGE = "rn-cni0"
CLUSTER_DOMAIN = "cluster.local"
CLUSTER_DNS = NODE_IP  # the kubelet's clusterDNS: CoreDNS listens there (service_network.py)
NODE_LABEL = ("keda-ray-scaler.io/node", "real")
NODE_TAINT = {"key": NODE_LABEL[0], "value": NODE_LABEL[1], "effect": "NoSchedule"}
CRASH_LOOP_MAX_S = 5  # the kubelet's back-off cap: see the module docstring
KUBELET_PORT = 10250
NETNS_HINT = "run under e2e/netns.sh: make e2e-local"
CNI_BIN_DIR = Path("/usr/lib/cni")  # Debian's containernetworking-plugins
LEGACY_LOG_DIR = Path("/var/log/containers")  # the kubelet links container logs here
CNI_CACHE = Path("/var/lib/cni/results")  # libcni's cache, one file per sandbox and network
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes; containerd adds ".ttrpc"

# Figures of the real-node tests (node start, pods, restarts), for a summary line.
FIGURES: dict[str, Any] = {}
# The nodes running now (tests/conftest.py prints their dead containers' logs on a failure).
ACTIVE: list[RealNode] = []


# ---------------------------------------------------------------------------------------------
# where we run


def in_node_netns() -> bool:
    """True inside the network namespace of ``e2e/netns.sh``: ``NODE_IP`` is a local address
    (binding to an address that is not local fails: ``ip_nonlocal_bind`` is 0 in a new
    namespace)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((NODE_IP, 0))
        except OSError:
            return False
    return True


def skip_reason() -> str | None:
    """Why a real node cannot run here (not root, or not in the node's network namespace), or
    None when it can."""
    if os.geteuid() != 0:
        return "a real node needs root (containerd, runc, mounts, cgroups)"
    if not in_node_netns():
        return NETNS_HINT
    return None


def image_cache() -> Path:
    """The e2e cache: ``KRS_E2E_CACHE``, else ``~/.cache/keda-ray-scaler/e2e`` of the real home
    (``tests/conftest.py`` points HOME at a temporary directory)."""
    if os.environ.get("KRS_E2E_CACHE"):
        return Path(os.environ["KRS_E2E_CACHE"])
    home = os.environ.get("KRS_REAL_HOME") or os.environ.get("HOME", "/root")
    return Path(home) / ".cache" / "keda-ray-scaler" / "e2e"


def build_images(*names: str) -> Path:
    """``e2e/images.py`` for ``names`` (a cache hit builds nothing); the path of images.json."""
    out = subprocess.run(
        [sys.executable, str(REPO / "e2e" / "images.py"), "--cache", str(image_cache()), *names],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    return Path(out.strip().splitlines()[-1]) / "images.json"


# ---------------------------------------------------------------------------------------------
# the node


@dataclass
class RealNode:
    """A started node: its name and IP, its processes, helpers, and the figures of its start.

    ``figures``: ``start_s`` (entry to Ready, PKI and imports included), ``containerd_ready_s``,
    ``import_<image>_s``, ``node_ready_s`` (kubelet started to Node Ready), ``kubelet_rss_mb``
    and ``containerd_rss_mb`` (at Ready), ``stop_s`` (after exit).
    """

    cp: ControlPlane
    bin_dir: Path
    images: dict[str, dict[str, Any]]
    state: Path
    name: str
    teardown_grace_s: int = 2
    ip: str = NODE_IP
    processes: dict[str, Process] = field(default_factory=dict)
    figures: dict[str, float] = field(default_factory=dict)
    _made_log_dir: bool = False  # the kubelet makes /var/log/containers; removed if we made it

    # -- paths ----------------------------------------------------------------------------------

    @property
    def socket(self) -> Path:
        """containerd's gRPC socket (CRI and ctr)."""
        return self.state / "containerd" / "containerd.sock"

    @property
    def cgroup_root(self) -> str:
        """The cgroup (in every hierarchy) that holds this node's pods."""
        return f"/krs-{self.name}-{os.getpid()}"

    @property
    def pod_logs(self) -> Path:
        """The kubelet's ``podLogsDir``."""
        return self.state / "pod-logs"

    @property
    def kubelet(self) -> Process:
        """The kubelet process."""
        return self.processes["kubelet"]

    @property
    def containerd(self) -> Process:
        """The containerd process."""
        return self.processes["containerd"]

    def _bin(self, name: str) -> str:
        return str(self.bin_dir / "bin" / name)

    # -- helpers for tests ----------------------------------------------------------------------

    def pin(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``spec`` (a PodSpec) with the nodeSelector and the toleration that put it here."""
        selector = {**spec.get("nodeSelector", {}), NODE_LABEL[0]: NODE_LABEL[1]}
        tolerations = [*spec.get("tolerations", []), {**NODE_TAINT, "operator": "Equal"}]
        return {**spec, "nodeSelector": selector, "tolerations": tolerations}

    def logs(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        previous: bool = False,
        tail: int | None = None,
    ) -> str:
        """A container's log through the API server and this kubelet (``kubectl logs``)."""
        args = ["logs", f"--namespace={namespace}", pod, f"--container={container}"]
        if previous:
            args.append("--previous")
        if tail is not None:
            args.append(f"--tail={tail}")
        return self.cp.kubectl(*args).stdout

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``ctr`` against this containerd, namespace ``k8s.io``."""
        result = subprocess.run(
            [self._bin("ctr"), f"--address={self.socket}", "--namespace=k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: {result.stderr.strip()}")
        return result

    def container_pid(self, namespace: str, pod: str, container: str) -> int:
        """The host PID of a running container's main process (its task in containerd)."""
        status = self.cp.get_json("pod", pod, f"--namespace={namespace}")["status"]
        [state] = [s for s in status.get("containerStatuses", []) if s["name"] == container]
        container_id = state["containerID"].removeprefix("containerd://")
        for line in self.ctr("tasks", "ls").stdout.splitlines()[1:]:
            task, pid, *_ = line.split()
            if task == container_id:
                return int(pid)
        raise LookupError(f"no task for {namespace}/{pod}/{container} ({container_id})")

    def dead_containers(self) -> list[tuple[str, str, str, str]]:
        """Containers on this node that died (restarted, or terminated with an error), as
        ``(namespace, pod, container, why)``."""
        pods = self.cp.get_json(
            "pods", "--all-namespaces", f"--field-selector=spec.nodeName={self.name}"
        )
        dead = []
        for pod in pods["items"]:
            for status in pod.get("status", {}).get("containerStatuses") or []:
                last = (status.get("lastState") or {}).get("terminated")
                now = (status.get("state") or {}).get("terminated")
                ended = last or (now if now and now.get("exitCode") else None)
                if ended:
                    restarts = status.get("restartCount", 0)
                    code = ended.get("exitCode")
                    why = f"{ended.get('reason', '')} exit {code}, {restarts} restarts"
                    dead.append(
                        (pod["metadata"]["namespace"], pod["metadata"]["name"], status["name"], why)
                    )
        return dead

    def dead_container_logs(self, tail: int = 20) -> str:
        """The last log lines of every dead container (``kubectl logs --previous`` when it was
        restarted), for a failing test's report."""
        parts = []
        for namespace, pod, container, why in self.dead_containers():
            for previous in (True, False):
                with contextlib.suppress(RuntimeError):
                    text = self.logs(namespace, pod, container, previous=previous, tail=tail)
                    label = "--previous" if previous else "current"
                    parts.append(f"--- {namespace}/{pod}/{container} ({why}; {label}):\n{text}")
                    break
        return "\n".join(parts)

    def rss_mb(self) -> dict[str, float]:
        """Resident memory now: kubelet, containerd, and the sum over this containerd's shims."""
        return {
            "kubelet": _rss_mb(self.kubelet.popen.pid),
            "containerd": _rss_mb(self.containerd.popen.pid),
            "shims": sum(_rss_mb(pid) for pid in self._shim_pids()),
            "pods": self.pods_memory_mb(),
        }

    def pods_memory_mb(self) -> float:
        """Memory charged to every pod on this node now (the memory cgroup of its pods)."""
        usage = (
            Path("/sys/fs/cgroup/memory") / self.cgroup_root.lstrip("/") / "memory.usage_in_bytes"
        )
        try:
            return int(usage.read_text()) / 2**20
        except (OSError, ValueError):
            return 0.0

    # -- start ----------------------------------------------------------------------------------

    def boot(self) -> None:
        """Certificates, configurations, containerd, the images, the kubelet; wait for Ready."""
        started = time.monotonic()
        for sub in ("logs", "pki", "containerd", "cni/net.d", "kubelet", "pod-logs"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        if len(str(self.socket)) > _SOCKET_PATH_MAX:
            raise ValueError(f"state directory too deep for a unix socket: {self.socket}")
        self._made_log_dir = not LEGACY_LOG_DIR.exists()
        self._write_containerd_config()
        self._start_containerd()
        self._import_images()
        self._make_cgroup_root()
        self._write_kubelet_files()
        self._start_kubelet()
        self.figures["start_s"] = round(time.monotonic() - started, 2)
        for process, mb in self.rss_mb().items():
            if process != "shims":
                self.figures[f"{process}_rss_mb"] = round(mb, 1)

    def _write_containerd_config(self) -> None:
        c = self.state / "containerd"
        config = f"""\
version = 3
root = '{c / "root"}'
state = '{c / "state"}'
temp = '{c / "tmp"}'

[grpc]
  address = '{self.socket}'

[ttrpc]
  address = '{self.socket}.ttrpc'

[plugins.'io.containerd.internal.v1.opt']
  path = '{c / "opt"}'

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '{self.images["pause"]["ref"]}'

[plugins.'io.containerd.cri.v1.runtime']
  # no CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj to the -998 CRI asks for pause
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_hugetlb_controller = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      disable_pause_image_pull = true
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '{self._bin("runc")}'
        Root = '{c / "runc"}'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['{CNI_BIN_DIR}']
    conf_dir = '{self.state / "cni" / "net.d"}'

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
"""
        (c / "config.toml").write_text(config)
        # A bridge inside the namespace: containerd wants an IP on eth0 (loopback alone is not
        # enough), and isGateway alone gives no route to the node IP (CNI plugins 1.1.1); nor to
        # the Service range, whose ClusterIPs kube-proxy translates on the node's side.
        cni = {
            "cniVersion": "1.0.0",
            "name": "krs-realnode",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET, "gateway": POD_GATEWAY}]],
                        "routes": [{"dst": f"{NODE_IP}/32"}, {"dst": SERVICE_CIDR}],
                        "dataDir": str(self.state / "cni" / "ipam"),
                    },
                }
            ],
        }
        (self.state / "cni" / "net.d" / "10-krs-realnode.conflist").write_text(json.dumps(cni))

    def _spawn(self, name: str, args: Sequence[str], env: dict[str, str] | None = None) -> Process:
        process = spawn(name, args, self.state / "logs", env)
        self.processes[name] = process
        return process

    def _start_containerd(self) -> None:
        started = time.monotonic()
        # the shim is found on PATH; runc by BinaryName
        path = f"{self.bin_dir / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        process = self._spawn(
            "containerd",
            [self._bin("containerd"), f"--config={self.state / 'containerd' / 'config.toml'}"],
            {"PATH": path},
        )
        wait_until(
            lambda: self.ctr("version", check=False).returncode == 0,
            timeout_s=60,
            what="containerd",
            alive=[process],
        )
        self.figures["containerd_ready_s"] = round(time.monotonic() - started, 2)

    def _import_images(self) -> None:
        for name, image in self.images.items():
            started = time.monotonic()
            self.ctr("images", "import", "--all-platforms", image["archive"])
            self.figures[f"import_{name}_s"] = round(time.monotonic() - started, 2)
        have = set(self.ctr("images", "ls", "--quiet").stdout.split())
        missing = sorted(i["ref"] for i in self.images.values() if i["ref"] not in have)
        if missing:
            raise RuntimeError(f"images not named after import: {missing}; containerd has {have}")

    def _make_cgroup_root(self) -> None:
        """The node's cgroups, weighted as a node of this machine's CPUs (a cgroup starts with
        the weight of one process: with two busy loops and the control plane beside it, the
        pods of 10 Ray workers starting at once got a fraction of a core and every raylet
        passed ``ray start``'s hard-coded 30 s; the kubelet weights its kubepods cgroup by the
        node's CPUs the same way)."""
        cpus = os.cpu_count() or 1
        for hierarchy in _cgroup_hierarchies():
            path = hierarchy / self.cgroup_root.lstrip("/")
            path.mkdir(exist_ok=True)
            if (path / "cpu.shares").exists():  # v1: 1024 a CPU
                (path / "cpu.shares").write_text(str(1024 * cpus))
            elif (path / "cpu.weight").exists():  # v2: 100 a CPU
                (path / "cpu.weight").write_text(str(min(100 * cpus, 10000)))

    def _write_kubelet_files(self) -> None:
        assert self.cp.ca is not None
        ca, pki = self.cp.ca, self.state / "pki"
        cert, key = ca.issue(
            f"system:node:{self.name}", organizations=["system:nodes"], client=True
        ).write(pki, "kubelet-client")
        write_kubeconfig(
            self.state / "kubelet.kubeconfig",
            self.cp.server,
            self.cp.ca_file,
            user=f"system:node:{self.name}",
            cert=cert,
            key=key,
        )
        serving_cert, serving_key = ca.issue(
            self.name, server=True, hosts=[NODE_IP, self.name]
        ).write(pki, "kubelet-serving")
        resolv = self.state / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.1\n")  # no pod can ask an outside resolver
        endpoint = f"unix://{self.socket}"
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,  # this machine has cgroup v1; 1.37 refuses it by default
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            "containerRuntimeEndpoint": endpoint,
            "imageServiceEndpoint": endpoint,
            "address": NODE_IP,
            "port": KUBELET_PORT,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "tlsCertFile": str(serving_cert),
            "tlsPrivateKeyFile": str(serving_key),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
                "x509": {"clientCAFile": str(self.cp.ca_file)},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "resolvConf": str(resolv),  # dnsPolicy Default, and ClusterFirst with hostNetwork
            "clusterDNS": [CLUSTER_DNS],  # dnsPolicy ClusterFirst on the pod network
            "clusterDomain": CLUSTER_DOMAIN,
            "podLogsDir": str(self.pod_logs),
            "volumePluginDir": str(self.state / "kubelet" / "volume-plugins"),
            "imageGCHighThresholdPercent": 100,  # never collect the imported images
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
            },
            "registerWithTaints": [NODE_TAINT],
            "featureGates": {"KubeletCrashLoopBackOffMax": True},
            "crashLoopBackOff": {"maxContainerRestartPeriod": f"{CRASH_LOOP_MAX_S}s"},
        }
        (self.state / "kubelet" / "config.yaml").write_text(yaml.safe_dump(config))

    def _start_kubelet(self) -> None:
        kubelet = self.state / "kubelet"
        started = time.monotonic()
        process = self._spawn(
            "kubelet",
            [
                self._bin("controlplane"),
                "kubelet",
                f"--config={kubelet / 'config.yaml'}",
                f"--kubeconfig={self.state / 'kubelet.kubeconfig'}",
                f"--root-dir={kubelet / 'root'}",
                f"--cert-dir={kubelet / 'pki'}",
                f"--hostname-override={self.name}",
                f"--node-ip={NODE_IP}",
                f"--node-labels={NODE_LABEL[0]}={NODE_LABEL[1]}",
                "--v=2",
            ],
        )
        wait_until(
            self._ready,
            timeout_s=120,
            what=f"node {self.name} Ready",
            interval_s=0.2,
            alive=[self.containerd, process],
        )
        self.figures["node_ready_s"] = round(time.monotonic() - started, 2)

    def _ready(self) -> bool:
        done = self.cp.kubectl("get", "node", self.name, "-o", "json", check=False)
        if done.returncode != 0:
            return False
        conditions = json.loads(done.stdout).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    # -- stop -----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Tear down as the module docstring says; raise if something could not be removed."""
        started = time.monotonic()
        problems: list[str] = []

        def step(what: str, action: Any, *args: Any) -> None:
            try:
                action(*args)
            except Exception as exc:
                problems.append(f"{what}: {exc}")

        kubelet, containerd = self.processes.get("kubelet"), self.processes.get("containerd")
        if kubelet is not None and kubelet.alive():
            step("delete the node's pods", self._drain)
            step("wait for the sandboxes to stop", self._wait_no_tasks)
        if kubelet is not None:
            kubelet.stop()
        containers: list[str] = []
        if containerd is not None and containerd.alive():
            step("kill leftover tasks", self._kill_tasks)
            containers = self.ctr("containers", "ls", "--quiet", check=False).stdout.split()
            containerd.stop()
        step("kill leftover shims", self._kill_shims)
        step("kill and remove the pods' cgroups", self._remove_cgroups)
        step("unmount", self._unmount_all)
        step("remove log links", self._remove_log_links)
        step("remove CNI cache entries", self._remove_cni_cache, containers)
        if not problems:  # nothing mounted below: deleting cannot reach into another filesystem
            shutil.rmtree(self.state / "containerd" / "root", ignore_errors=True)
        if kubelet is not None:
            self.cp.kubectl("delete", "node", self.name, "--wait=false", check=False)
        self.processes.clear()
        self.figures["stop_s"] = round(time.monotonic() - started, 2)
        if problems:
            raise RuntimeError("real node teardown left something behind:\n" + "\n".join(problems))

    def _drain(self) -> None:
        if self.cp.kubectl("get", "node", self.name, check=False).returncode != 0:
            return  # never registered: no pod can be bound to it
        self.cp.kubectl("cordon", self.name)
        selector = f"--field-selector=spec.nodeName={self.name}"
        self.cp.kubectl(
            "delete",
            "pods",
            "--all-namespaces",
            selector,
            f"--grace-period={self.teardown_grace_s}",
            "--wait=false",
        )

        def gone() -> bool:
            pods = self.cp.get_json("pods", "--all-namespaces", selector)["items"]
            return not pods

        wait_until(
            gone,
            timeout_s=self.teardown_grace_s + 60,
            what="the kubelet to stop the node's pods",
            alive=[self.kubelet],
        )

    def _tasks(self) -> list[str]:
        return self.ctr("tasks", "ls", "--quiet").stdout.split()

    def _wait_no_tasks(self) -> None:
        wait_until(lambda: not self._tasks(), timeout_s=30, what="containerd to have no tasks")

    def _kill_tasks(self) -> None:
        for task in self._tasks():
            self.ctr("tasks", "kill", "--all", "--signal=SIGKILL", task, check=False)
            self.ctr("tasks", "delete", "--force", task, check=False)

    def _shim_pids(self) -> list[int]:
        """Shims of this containerd: their command line names its socket after ``-address``."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if not os.path.basename(args[0]).startswith(b"containerd-shim"):
                continue
            for flag, value in itertools.pairwise(args):
                if flag in (b"-address", b"--address") and value == os.fsencode(self.socket):
                    pids.append(int(entry.name))
        return pids

    def _kill_shims(self) -> None:
        _kill_and_wait(self._shim_pids(), "shims")

    def _remove_cgroups(self) -> None:
        hierarchies = [h / self.cgroup_root.lstrip("/") for h in _cgroup_hierarchies()]
        pids = sorted(
            {
                int(pid)
                for root in hierarchies
                if root.is_dir()
                for procs in root.rglob("cgroup.procs")
                for pid in procs.read_text().split()
            }
        )
        _kill_and_wait(pids, "processes in the node's cgroups")
        left = []
        for root in hierarchies:
            if not root.is_dir():
                continue
            directories = sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True)
            for directory in [*directories, root]:
                try:
                    directory.rmdir()
                except OSError as exc:
                    left.append(f"{directory}: {exc.strerror}")
        if left:
            raise RuntimeError("cgroups not removed: " + ", ".join(left[:5]))

    def _unmount_all(self) -> None:
        for mount in reversed(_mounts_under(self.state)):
            if subprocess.run(["umount", mount], capture_output=True).returncode != 0:
                subprocess.run(["umount", "--lazy", mount], capture_output=True)
        left = _mounts_under(self.state)
        if left:
            raise RuntimeError(f"still mounted: {left[:5]}")

    def _remove_cni_cache(self, containers: Sequence[str]) -> None:
        """libcni's cached results of this containerd's sandboxes (left where no CNI DEL ran:
        the kubelet died first)."""
        ours = set(containers)
        if not ours or not CNI_CACHE.is_dir():
            return
        for entry in CNI_CACHE.iterdir():  # <network>-<container id>-<interface>
            if ours & set(entry.name.split("-")):
                entry.unlink()

    def _remove_log_links(self) -> None:
        if not LEGACY_LOG_DIR.is_dir():
            return
        for link in LEGACY_LOG_DIR.iterdir():
            if link.is_symlink() and Path(os.readlink(link)).is_relative_to(self.pod_logs):
                link.unlink()
        if self._made_log_dir and not any(LEGACY_LOG_DIR.iterdir()):
            LEGACY_LOG_DIR.rmdir()


@contextlib.contextmanager
def real_node(
    cp: ControlPlane,
    bin_dir: Path,
    images_json: Path,
    *,
    name: str = "realnode-0",
    state_dir: Path | None = None,
    teardown_grace_s: int = 2,
) -> Iterator[RealNode]:
    """Start a real node in ``cp`` (see the module docstring); tear it down on exit.

    ``images_json`` is ``e2e/images.py``'s index; every image in it is imported, and it must
    hold ``pause`` (the sandbox image). ``state_dir`` (default ``<cp.workdir>/<name>``) holds
    configuration, certificates, logs and containerd's and the kubelet's state."""
    images: dict[str, dict[str, Any]] = json.loads(Path(images_json).read_text())
    if "pause" not in images:
        raise ValueError(f"{images_json} has no pause image (the pod sandbox)")
    state = state_dir or cp.workdir / name
    node = RealNode(cp, bin_dir, images, state, name, teardown_grace_s)
    try:
        node.boot()
        ACTIVE.append(node)
        yield node
    finally:
        if node in ACTIVE:
            ACTIVE.remove(node)
        node.stop()


# ---------------------------------------------------------------------------------------------
# host helpers


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _kill_and_wait(pids: Sequence[int], what: str, timeout_s: float = 10.0) -> None:
    """SIGKILL each PID; wait until none is left."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} still running after SIGKILL: {list(pids)}")
        time.sleep(0.1)


def _mountinfo() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount, in mount order."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        point = before.split()[4]
        # octal escapes: \040 space, \011 tab, \012 newline, \134 backslash
        point = point.encode().decode("unicode_escape").encode("latin-1").decode()
        mounts.append((point, after.split()[0]))
    return mounts


def _mounts_under(directory: Path) -> list[str]:
    root = str(directory.resolve())
    return [p for p, _ in _mountinfo() if p == root or p.startswith(root + "/")]


def _cgroup_hierarchies() -> list[Path]:
    """The mount point of every cgroup hierarchy (v1 controllers, named, the v2 unified one)."""
    return [Path(p) for p, fstype in _mountinfo() if fstype in ("cgroup", "cgroup2")]
