"""The seed scenario on the kind cluster, as e2e-local runs it on the real node (e2e/run.sh runs
it once the example RayCluster "demo" and its agent are up; kubectl on PATH, KUBECONFIG set):

1. 20 tasks of {CPU: 5} (e2e/kind/work.py in the head's Ray container) on 10-CPU pods: KEDA's
   HPA on the RayWorkerGroup, the agent's patch and KubeRay make exactly 10 worker pods;
2. the tasks start (the gate opens); 16 end after SHORT_S, 4 hold their pods: KubeRay deletes
   exactly the drained idle pods, each named in ``workersToDelete``, no pod with a task;
3. the driver stops: the held pods are drained and named too, the group goes back to its floor
   (0, the example's minReplicas).

Every pod that went must have been named by the agent (``workersToDelete`` seen, or KubeRay's
log "Deleting pod"); KubeRay's "Randomly deleting Pod" must never appear; the agent's
ray_scaler_wrong_victims_total stays 0. Prints one line ``e2e-kind: ...`` with the figures.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

NS = "ray"
GROUP = "cpu"
EXPECTED = 10
SHORT_S = 20
NODE = os.environ.get("KRS_KIND_NODE", "krs-kind-control-plane")
WORK = Path(__file__).resolve().parent / "work.py"
SELECTOR = f"ray.io/cluster=demo,ray.io/group={GROUP},ray.io/node-type=worker"


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} scenario: {message}", file=sys.stderr, flush=True)


def kubectl(*argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", *argv], input=stdin, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(argv)}: {done.stderr.strip()}")
    return done.stdout


def wait(what: str, check: Callable[[], bool], timeout_s: float) -> float:
    """Seconds until ``check()``; raises after ``timeout_s``."""
    start = time.monotonic()
    while True:
        try:
            if check():
                return time.monotonic() - start
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            log(f"{what}: {exc}")
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(1)


class Recorder:
    """The group's pods and the RayCluster's cpu group, sampled every second in a thread."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.live: set[str] = set()  # not being deleted
        self.ready: set[str] = set()
        self.named: set[str] = set()  # ever in workersToDelete
        self.max_replicas = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def sample(self) -> None:
        pods = json.loads(kubectl("-n", NS, "get", "pods", "-l", SELECTOR, "-o", "json"))["items"]
        live, ready = set(), set()
        for pod in pods:
            name = pod["metadata"]["name"]
            self.seen.add(name)
            if pod["metadata"].get("deletionTimestamp"):
                continue
            live.add(name)
            conditions = (pod.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                ready.add(name)
        self.live, self.ready = live, ready
        rc = json.loads(kubectl("-n", NS, "get", "raycluster", "demo", "-o", "json"))
        (group,) = [g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == GROUP]
        self.max_replicas = max(self.max_replicas, int(group.get("replicas", 0)))
        self.named |= set((group.get("scaleStrategy") or {}).get("workersToDelete") or ())

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.sample()
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                self.errors += 1


def head_exec(container: str, script: str, stdin: str | None = None) -> str:
    head = kubectl(
        "-n", NS, "get", "pods", "-l", "ray.io/cluster=demo,ray.io/node-type=head",
        "-o", "jsonpath={.items[0].metadata.name}",
    )  # fmt: skip
    args = ["-n", NS, "exec", "-i" if stdin is not None else "-q", head, "-c", container]
    return kubectl(*args, "--", "sh", "-c", script, stdin=stdin)


def agent_metrics() -> str:
    """The agent's /metrics, read in its own container."""
    script = (
        "import urllib.request; print(urllib.request.urlopen("
        "'http://127.0.0.1:9400/metrics', timeout=5).read().decode())"
    )
    return head_exec("agent", f'python -c "{script}"')


def live_in_ray() -> set[str]:
    """Pods the agent sees as live Ray nodes (ray_scaler_node_info with a node_id, neither a
    victim nor failing), as e2e-local's ``agent_sample(...).live``."""
    live = set()
    for line in agent_metrics().splitlines():
        if not line.startswith("ray_scaler_node_info{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if labels.get("node_id") and labels.get("state") not in ("victim", "failing"):
            live.add(labels.get("pod", ""))
    return live


def agent_counter(name: str) -> float:
    text = agent_metrics()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") or line.startswith(name + " ")
    )


def operator_deletions() -> tuple[set[str], set[str]]:
    """KubeRay's log: pods deleted as named in workersToDelete, and pods deleted at random."""
    text = kubectl("-n", "kuberay-system", "logs", "deploy/kuberay-operator", "--tail=-1")
    named: set[str] = set()
    randomly: set[str] = set()
    for line in text.splitlines():
        try:
            entry: dict[str, Any] = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") == "Deleting pod":
            named.add(str(entry.get("name") or entry.get("Pod", {}).get("name")))
        elif entry.get("msg") == "Randomly deleting Pod":
            randomly.add(str(entry.get("with name")))
    return named, randomly


def busy_pods() -> set[str]:
    """Pods whose Ray node has CPU in use, from the agent's export (as e2e-local's
    ``agent_sample(...).busy``): a CPU total with less available, or none (a zero amount is not
    exported)."""
    total: dict[str, float] = {}
    available: dict[str, float] = {}
    for line in agent_metrics().splitlines():
        name, _, rest = line.partition("{")
        if name not in ("ray_scaler_node_resource_total", "ray_scaler_node_resource_available"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', rest.split("}", 1)[0]))
        if labels.get("resource") == "CPU" and labels.get("pod"):
            into = total if name.endswith("total") else available
            into[labels["pod"]] = float(line.rsplit(" ", 1)[1])
    return {pod for pod, cpus in total.items() if available.get(pod, 0.0) < cpus}


def stable_busy() -> set[str]:
    """The busy pods once two reads 5 s apart agree and hold the 4 long tasks (2 to 4 pods)."""
    found: list[set[str]] = []

    def agreed() -> bool:
        first = busy_pods()
        time.sleep(5)
        found[:] = [busy_pods()]
        return first == found[0] and 2 <= len(first) <= 4

    wait("a stable busy set", agreed, 120)
    return found[0]


def run() -> dict[str, str]:
    figures: dict[str, str] = {}
    wait("the agent ready", lambda: bool(agent_counter("ray_scaler_snapshot_success")), 180)
    recorder = Recorder().start()
    try:
        head_exec("ray-head", "cat > /tmp/work.py", stdin=WORK.read_text())
        head_exec(
            "ray-head",
            f"SHORT_S={SHORT_S} nohup python /tmp/work.py"
            " >/tmp/work.log 2>&1 </dev/null & echo $! >/tmp/work.pid",
        )
        log("20 tasks of {CPU: 5} submitted; waiting for 10 Ready pods")
        up = wait(
            f"{EXPECTED} Ready {GROUP} pods",
            lambda: (
                len(recorder.ready) == EXPECTED == len(recorder.live)
                and recorder.ready <= live_in_ray()
            ),
            600,
        )
        figures["to 10 pods"] = f"{up:.0f} s"
        time.sleep(5)  # a target above 10 would show within an HPA sync or two
        # the tasks' start file, in the node directory every worker mounts (the kind node)
        docker = os.environ.get("DOCKER", "docker")
        subprocess.run([docker, "exec", NODE, "touch", "/var/lib/krs-start-gate/open"], check=True)
        log(f"10 pods in {up:.0f} s; the tasks start")

        def short_done() -> bool:
            return head_exec("ray-head", "cat /tmp/work.log").count("task done on") >= 16

        wait("16 short tasks done", short_done, SHORT_S + 300)
        busy = stable_busy()
        log(f"busy pods {sorted(busy)}; waiting for only them to be left")
        idle = wait("only the busy pods left", lambda: recorder.live == busy, 300)
        figures["idle to deletion"] = f"{idle:.0f} s"
        head_exec("ray-head", 'kill "$(cat /tmp/work.pid)"')
        log("driver stopped; waiting for the floor (0 pods)")
        floor = wait("0 pods", lambda: not recorder.seen or not _any_pods(), 300)
        figures["back to floor"] = f"{floor:.0f} s"
    finally:
        recorder.stop()
    named, randomly = operator_deletions()
    named |= recorder.named
    not_named = sorted(recorder.seen - named)
    figures["most pods"] = str(recorder.max_replicas)
    figures["pods created"] = str(len(recorder.seen))
    figures["non-victim pods deleted"] = str(len(not_named))
    figures["randomly deleted"] = str(len(randomly))
    figures["wrong victims"] = f"{agent_counter('ray_scaler_wrong_victims_total'):g}"
    failures = [
        not_named and f"deleted without being named: {not_named}",
        randomly and f"KubeRay deleted at random: {sorted(randomly)}",
        recorder.max_replicas < EXPECTED and f"most replicas {recorder.max_replicas}",
        figures["wrong victims"] != "0" and "wrong victims counted",
    ]
    if any(failures):
        raise AssertionError("; ".join(f for f in failures if f) + f" ({figures})")
    return figures


def _any_pods() -> bool:
    return bool(kubectl("-n", NS, "get", "pods", "-l", SELECTOR, "-o", "name").strip())


def main() -> int:
    figures = run()
    print("e2e-kind: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
