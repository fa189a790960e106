"""Ray's label selectors on the real node with real KubeRay: the cluster and its driver.

:data:`GROUPS` are three worker groups made from the example's ``cpu`` group as
:func:`real_kuberay.kuberay_loop` puts it on the real node (pinned, joining the head at the node
IP, the start gate), each with its Ray node labels in the group's top-level ``labels`` field,
the one KubeRay 1.5+ accepts (it refuses ``rayStartParams.labels``, ``validateRayGroupLabels``)
and passes to ``ray start --labels``: ``spot`` and ``on-demand`` (2 logical CPUs each, both
also ``tier: batch``) and ``gpu`` (``ray.io/accelerator-type: A100``, 1 CPU and 1 logical GPU
from ``rayStartParams``: the node has no GPU, the example's ``nvidia.com/gpu`` request goes).
With ``priority``, ``spot`` has worker-group priority 10 (KubeRay 1.7's field; 1.5's CRD
has none and prunes it). Each group has its RayWorkerGroup and ScaledObject, copies of the
example's ``cpu`` ones, named in the agent's Role (the example's names its own two RayWorkerGroups'
status). The example's ``gpu`` group and its objects go.

:class:`LabelDriver` runs :mod:`label_driver` through Ray Client.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray_on_node import CLIENT_ADDRESS, SHARE_MOUNT, make_share
from real_loop import IDLE_TIMEOUT_S, Docs

from keda_ray_scaler.decisions import Unplaceable
from keda_ray_scaler.planner import plan
from keda_ray_scaler.schema.decoding import decode
from keda_ray_scaler.sources.scrape import parse_exposition

CLUSTER = "demo"
#: group -> (Ray node labels, rayStartParams of Ray's logical resources, maxReplicas)
GROUPS: dict[str, tuple[dict[str, str], dict[str, str], int]] = {
    "spot": ({"market-type": "spot", "tier": "batch"}, {"num-cpus": "2"}, 5),
    "on-demand": ({"market-type": "on-demand", "tier": "batch"}, {"num-cpus": "2"}, 5),
    "gpu": ({"ray.io/accelerator-type": "A100"}, {"num-cpus": "1", "num-gpus": "1"}, 2),
}
#: the group whose priority decides the ``priority`` unit (KubeRay 1.7), and its priority:
#: without it the planner gives that unit an ``on-demand`` pod (equal cost, the later group)
PRIORITY_GROUP, PRIORITY = "spot", 10
#: unit -> the group it must run in (:mod:`label_driver`)
PHASE1 = {"spot-0": "spot", "spot-1": "spot", "gpu-actor": "gpu", "pg-0": "spot"}
PHASE1 |= {"pg-1": "on-demand"}
PHASE2 = {"fallback": "on-demand"}
PRIORITY_UNIT = {"priority": PRIORITY_GROUP}
#: the selector no group satisfies (the ``nowhere`` unit), as the agent exports it
NOWHERE = "market-type=reserved"
#: figures of the label test, printed as one ``e2e-labels:`` line (tests/conftest.py)
FIGURES: dict[str, str] = {}
DRIVER = Path(__file__).with_name("label_driver.py")


def _group(template: dict[str, Any], name: str, priority: bool) -> dict[str, Any]:
    labels, params, high = GROUPS[name]
    group = copy.deepcopy(template)
    group.update(groupName=name, minReplicas=0, maxReplicas=high, replicas=0)
    group["idleTimeoutSeconds"] = IDLE_TIMEOUT_S
    group["labels"] = dict(labels)
    group["rayStartParams"] = {
        k: v for k, v in group["rayStartParams"].items() if k not in ("num-cpus", "num-gpus")
    } | params
    if priority and name == PRIORITY_GROUP:
        group["priority"] = PRIORITY
    return group


def _renamed(doc: dict[str, Any], group: str) -> dict[str, Any]:
    """A copy of the example's ``cpu`` RayWorkerGroup or ScaledObject for ``group``."""
    out = copy.deepcopy(doc)
    name = f"ray-{CLUSTER}-{group}"
    out["metadata"]["name"] = name
    if doc["kind"] == "RayWorkerGroup":
        out["spec"]["groupName"] = group
        return out
    out["metadata"]["labels"]["ray.io/group"] = group
    out["spec"]["scaleTargetRef"]["name"] = name
    out["spec"]["maxReplicaCount"] = GROUPS[group][2]
    out["spec"]["triggers"][0]["metadata"]["workerGroup"] = group
    return out


def _status_rule(role: dict[str, Any]) -> dict[str, Any]:
    """The agent's Role with its RayWorkerGroups' status (the example names its own two)."""
    out = copy.deepcopy(role)
    for rule in out["rules"]:
        if rule["resources"] == ["rayworkergroups/status"]:
            rule["resourceNames"] = [f"ray-{CLUSTER}-{g}" for g in GROUPS]
    return out


def labelled_groups(priority: bool) -> Callable[[Docs], Docs]:
    """The overlay's objects with :data:`GROUPS` in place of the example's two groups."""

    def transform(docs: Docs) -> Docs:
        out: Docs = []
        for doc in docs:
            name = doc["metadata"]["name"]
            if doc["kind"] == "RayCluster":
                rc = copy.deepcopy(doc)
                (cpu,) = [g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == "cpu"]
                rc["spec"]["workerGroupSpecs"] = [_group(cpu, g, priority) for g in GROUPS]
                out.append(rc)
            elif doc["kind"] in ("RayWorkerGroup", "ScaledObject"):
                if name == f"ray-{CLUSTER}-cpu":
                    out.extend(_renamed(doc, g) for g in GROUPS)
            elif doc["kind"] == "Role" and name == f"ray-{CLUSTER}-agent":
                out.append(_status_rule(doc))
            else:
                out.append(doc)
        return out

    return transform


def unplaceable(agent_metrics: str) -> list[Unplaceable]:
    """What the scaler's planner lists unplaceable on the agent's /metrics: the exposition
    decoded as the scaler's scrape source decodes it, then planned."""
    snapshot = decode(parse_exposition(agent_metrics))[CLUSTER]
    return list(plan(snapshot.input).unplaceable)


@dataclass
class LabelDriver:
    """:mod:`label_driver` running on this machine, its events in ``out``."""

    popen: subprocess.Popen[str]
    out: Path
    markers: Path  # on the host
    release: Path  # on the host

    @classmethod
    def start(cls, workdir: Path, share: Path, token: str) -> LabelDriver:
        """Start the driver (phase 1 submitted at once)."""
        markers = make_share(share / "markers-labels")
        release = share / "release-labels"
        out = workdir / "labels-driver.jsonl"
        with out.open("w") as stdout, (workdir / "logs" / "labels-driver.log").open("w") as err:
            popen = subprocess.Popen(
                [
                    sys.executable,
                    str(DRIVER),
                    CLIENT_ADDRESS,
                    f"{SHARE_MOUNT}/{markers.name}",
                    f"{SHARE_MOUNT}/{release.name}",
                ],
                env={**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token},
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        return cls(popen, out, markers, release)

    def send(self, line: str) -> None:
        """One command line to the driver."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def events(self) -> list[dict[str, Any]]:
        """The driver's events so far."""
        lines = self.out.read_text().splitlines() if self.out.exists() else []
        return [json.loads(x) for x in lines if x.startswith("{")]

    def started(self) -> dict[str, str]:
        """unit -> the pod it started on (its marker)."""
        return {p.name: p.read_text() for p in self.markers.iterdir() if not p.name.endswith("tmp")}

    def alive(self) -> bool:
        """The driver still runs."""
        return self.popen.poll() is None

    def stop(self) -> None:
        """Release the tasks and end the driver (by its PID: its own session)."""
        from keda_ray_scaler.demo.raylets import stop_group

        self.release.touch()
        if self.alive():
            with contextlib.suppress(OSError):  # BrokenPipeError: it ended meanwhile
                self.send("stop")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(20)
        stop_group(self.popen, 5)
