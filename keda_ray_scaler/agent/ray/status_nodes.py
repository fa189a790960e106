"""The worker nodes of one ``GetClusterStatusReply``, mapped to pods and groups (pure; read by
:func:`~keda_ray_scaler.agent.ray.ray_status.parse_status`).

KubeRay sets ``instance_id`` to the pod name and ``ray_node_type_name`` to the worker group; a
node lacking either is looked up by its IP among the pods Kubernetes reports (:class:`PodIps`:
every address of ``status.podIPs``, so a dual-stack pod matches by either). Dead nodes count
only by their pod name; a pod that lists two live nodes keeps its newest
(:mod:`~keda_ray_scaler.agent.ray.node_ages`), the others are superseded, and the pod is
contested: never a victim while they are listed. So is a pod whose one live node is superseded
(a newer node of it listed dead, or superseded at an earlier poll): it may be the pod's own
node, and a pod with a live node must never pass for one without (a pod with no node is
removed without a drain).

Any process that reaches the GCS can start a raylet under any instance id, so a name is taken
only when it may be a pod's (:func:`~keda_ray_scaler.agent.ray.refusals.is_pod_name`) and, when
the pod's IPs are known, only from one of them: a node breaking either rule maps to no pod
(group ``""``, pod = its node id), alive or dead, and is refused (counted). A pod a live node
names from another IP is contested too: were that node the pod's own (a raylet whose IP is not
its pod's), the pod would look absent from Ray, and an absent pod may be removed without a
drain. Pods that share an IP (``hostNetwork`` workers on one Kubernetes node) cannot be told
apart by it: a node at that IP may name any of them, and maps to that pod only while it is the
only live node naming it (a second live node, or a superseded live one, contests the pod); a
node with no name maps to no pod at a shared IP. Where the pod's IP is not known (no pod
source, the demo's raylets on 127.0.0.1, a pod not yet given an IP) the name is taken as before.
A node whose id is empty or too long is left out.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from keda_ray_scaler.agent.ray.label_read import node_labels
from keda_ray_scaler.agent.ray.node_memo import NodeMade, NodeMemo, NodeSeen
from keda_ray_scaler.agent.ray.refusals import (
    Refusal,
    Refused,
    ip_key,
    is_pod_name,
    node_id_ok,
    same_ip,
)
from keda_ray_scaler.gcs._generated import autoscaler_pb2
from keda_ray_scaler.gcs._generated.autoscaler_pb2 import NodeState
from keda_ray_scaler.model import NodeStatus, Resources, WorkerNode, to_units

# Placement-group resources ("CPU_group_<pg>", "CPU_group_<i>_<pg>", "bundle_group_<pg>"):
# reserved inside a placement group, never capacity a new pod could add.
PG_RESOURCE = re.compile(r"^.+_group_(\d+_)?[0-9a-f]{36}$")

_DEAD, _DRAINING = autoscaler_pb2.DEAD, autoscaler_pb2.DRAINING  # NodeStatus's numbers

#: The ``NodeState.node_activity`` line Ray reports while a worker process runs on the node (as
#: read from Ray 2.60: a node whose leases wait for their workers shows only its resources in
#: use, ``"Resource: CPU currently in use."``).
BUSY_WORKERS_ACTIVITY = "Busy workers on node."

#: ``node:__internal_head__`` marks the head (``ray.autoscaler.v2.utils.is_head_node``).
HEAD_RESOURCE = "node:__internal_head__"


@functools.lru_cache(maxsize=4096)  # pure; the same few names recur on every node
def is_internal_resource(name: str) -> bool:
    """``node:<ip>`` / head markers and placement-group resources: not pod capacity."""
    return name.startswith("node:") or bool(PG_RESOURCE.match(name))


@dataclass(frozen=True, slots=True)
class PodRef:
    """An active pod as Kubernetes knows it: its name, group and IPs (``status.podIPs``)."""

    pod: str
    group: str
    ips: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodIps:
    """The active pods' IPs both ways: each pod by its name, and the pods at each address."""

    by_name: Mapping[str, PodRef]
    by_ip: Mapping[str, tuple[PodRef, ...]]  # keyed by ip_key: one spelling per address

    @classmethod
    def of(cls, pods: Iterable[PodRef]) -> PodIps:
        """The index of ``pods`` (every IP of each; pods sharing an IP all listed at it)."""
        by_ip: dict[str, list[PodRef]] = {}
        by_name: dict[str, PodRef] = {}
        for ref in pods:
            by_name[ref.pod] = ref
            for key in dict.fromkeys(ip_key(ip) for ip in ref.ips if ip):
                by_ip.setdefault(key, []).append(ref)
        return cls(by_name, {key: tuple(refs) for key, refs in by_ip.items()})

    def ips_of(self, pod: str) -> tuple[str, ...]:
        """The IPs of ``pod``; none when the pod or its IP is not known."""
        ref = self.by_name.get(pod)
        return tuple(ip for ip in ref.ips if ip) if ref is not None else ()

    def at(self, ip: str, name: str) -> PodRef | None:
        """The pod ``name`` if it is at ``ip``; with no name, the one pod at ``ip`` (None when
        none is, or when pods share it)."""
        refs = self.by_ip.get(ip_key(ip), ()) if ip else ()
        if name:
            return next((ref for ref in refs if ref.pod == name), None)
        return refs[0] if len(refs) == 1 else None


def resources_of(entries: Mapping[str, float]) -> Resources:
    """Ray's resource map as :class:`Resources`, without its internal resources."""
    # The same map recurs at every poll (and on every node of a group): read once.
    return _resources(tuple(entries.items()))


@functools.lru_cache(maxsize=8192)  # pure; bounded
def _resources(items: tuple[tuple[str, float], ...]) -> Resources:
    return Resources.from_units({k: to_units(v) for k, v in items if not is_internal_resource(k)})


@dataclass
class NodeRead:
    """The worker nodes of one status reply, mapped to pods and groups (``parse_status``)."""

    nodes: list[WorkerNode] = field(default_factory=list)
    unmapped: int = 0
    dead: set[str] = field(default_factory=set)
    starting: set[str] = field(default_factory=set)
    #: live nodes of a pod that lists a newer one (its restarted raylet's)
    superseded: list[WorkerNode] = field(default_factory=list)
    #: pods two or more live nodes name, one from another IP (an impostor, or a raylet whose
    #: IP is not its pod's), or with a live node superseded: never victims, whichever node is
    #: the pod's own
    contested: set[str] = field(default_factory=set)
    #: what was left out, and why
    refused: list[Refused] = field(default_factory=list)
    _starting_nodes: set[str] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        states: Sequence[NodeState],
        pods: PodIps,
        known: set[str],
        first_seen: Mapping[str, int],
        stale: frozenset[str] = frozenset(),
        memo: NodeMemo | None = None,
    ) -> NodeRead:
        """Every live worker node of ``states``, at most one per pod (its newest, module
        :mod:`~keda_ray_scaler.agent.ray.node_ages`); dead ones only by their pod name. With
        ``memo`` (its keys ``states``'), what a node gave the last parse is taken from it."""
        read = cls()
        dead_ids: dict[str, list[str]] = {}
        keyed = memo if memo is not None and len(memo.keys) == len(states) else None
        for i in range(len(states)):
            if keyed is None:
                seen = see(states[i], pods, known)
            else:
                seen = keyed.seen(i) or keyed.saw(i, see(states[i], pods, known, (keyed, i)))
            read.took(seen, dead_ids)
        read.keep_newest(first_seen, dead_ids, stale)
        return read

    def took(self, seen: NodeSeen, dead_ids: dict[str, list[str]]) -> None:
        """What one node gave the parse (:func:`see`) added to it; a dead node's id kept by pod
        in ``dead_ids``."""
        self.refused += seen.refused
        if seen.dead:
            self.dead.add(seen.dead)
            dead_ids.setdefault(seen.dead, []).append(seen.node_id)
        if seen.contested:
            self.contested.add(seen.contested)
        self.unmapped += seen.unmapped
        made = seen.made
        if made is not None:
            self.nodes.append(made.node)
            self.refused += made.refused
            if made.starting:
                self.starting.add(made.node.pod)
                self._starting_nodes.add(seen.node_id)

    def keep_newest(
        self,
        first_seen: Mapping[str, int],
        dead_ids: Mapping[str, Sequence[str]],
        stale: frozenset[str],
    ) -> None:
        """Of each pod's live nodes, keep the one first seen last, unless a node of the pod
        seen later is dead (its restarted raylet's node, drained or gone: the pod has no live
        node then) or the node was superseded before (``stale``); the others are superseded,
        and their pods contested (:meth:`contest_superseded`)."""
        newest: dict[str, WorkerNode] = {}
        per_pod = Counter(n.pod for n in self.nodes if n.group)
        for pod in sorted(p for p, count in per_pod.items() if count > 1):
            self.contested.add(pod)
            self.refused.append(Refused(Refusal.TWO_LIVE_NODES, pod, f"{per_pod[pod]} live nodes"))
        for node in self.nodes:
            held = newest.get(node.pod)
            if node.node_id in stale:
                continue
            if held is None or _age_key(node, first_seen) > _age_key(held, first_seen):
                newest[node.pod] = node
        for pod, ids in dead_ids.items():
            held = newest.get(pod)
            if held is not None and any(
                _id_key(i, first_seen) > _age_key(held, first_seen) for i in ids
            ):
                del newest[pod]
        if len(newest) == len(self.nodes):
            return
        kept = {id(n) for n in newest.values()}
        self.superseded = [n for n in self.nodes if id(n) not in kept]
        self.nodes = [n for n in self.nodes if id(n) in kept]
        self.starting = {
            p for p in self.starting if p in newest and newest[p].node_id in self._starting_nodes
        }
        self.contest_superseded()

    def contest_superseded(self) -> None:
        """A pod with a live node superseded is contested, counted when nothing else contests it
        (its newer node dead: a restarted raylet's drained node, or an impostor's that stopped;
        only the pod's own node would then be left, and the pod must not look absent)."""
        for pod in sorted({n.pod for n in self.superseded if n.group} - self.contested):
            self.contested.add(pod)
            detail = "a live node of the pod superseded by a newer one, now dead or gone"
            self.refused.append(Refused(Refusal.SUPERSEDED_NODE_ALIVE, pod, detail))


def see(
    ns: NodeState, pods: PodIps, known: set[str], memo: tuple[NodeMemo, int] | None = None
) -> NodeSeen:
    """What node ``ns`` gives the parse, when ``pods`` are the pods and ``known`` the worker
    groups: nothing for the head; its id refused; the pod it names when dead; else the worker
    node it is, mapped (module doc). With ``memo`` (and the node's place in the reply), a node
    the last parse made alike is taken from it."""
    node_id = ns.node_id.hex()
    if HEAD_RESOURCE in ns.total_resources and ns.status != _DEAD:
        return NodeSeen(node_id)
    if not node_id_ok(ns.node_id):
        bad = Refused(Refusal.NODE_ID_INVALID, ns.node_id[:128].hex())
        return NodeSeen(node_id, refused=(bad,))
    name, refused = _claimed(ns, pods)
    if ns.status == _DEAD:  # never by IP: a new pod may have the dead one's address
        return NodeSeen(node_id, refused=refused, dead=name or "")
    contested = ns.instance_id if name is None and pods.ips_of(ns.instance_id) else ""
    pod, group = name or "", ns.ray_node_type_name
    ref = pods.at(ns.node_ip_address, pod)
    if ref is not None and name is not None:
        pod, group = ref.pod, group or ref.group
    unmapped = name is None or not pod or not group or group not in known
    if unmapped:
        group = "" if group not in known or name is None else group
        pod = pod or node_id
    make = functools.partial(_made, ns, node_id, pod, group)
    made = make() if memo is None else memo[0].made(memo[1], pod, group, make)
    return NodeSeen(node_id, made, refused, "", contested, unmapped)


def _claimed(ns: NodeState, pods: PodIps) -> tuple[str | None, tuple[Refused, ...]]:
    """The pod ``ns`` names ("" when none), or None and why its name is refused."""
    name = ns.instance_id
    if not name:
        return "", ()
    if not is_pod_name(name):
        return None, (Refused(Refusal.POD_NAME_INVALID, name, f"node {ns.node_id.hex()}"),)
    ips = pods.ips_of(name)
    if ips and not any(same_ip(ip, ns.node_ip_address) for ip in ips):
        at = ", ".join(ips)
        detail = f"node {ns.node_id.hex()} at {ns.node_ip_address[:64]!r}; the pod is at {at}"
        return None, (Refused(Refusal.NODE_IP_MISMATCH, name, detail),)
    return name, ()


def _made(ns: NodeState, node_id: str, pod: str, group: str) -> NodeMade:
    """The live node ``ns`` is, mapped to ``pod`` and ``group``."""
    labels, refused = node_labels(dict(ns.labels), dict(ns.dynamic_labels), node_id)
    node = WorkerNode(
        pod=pod,
        group=group,
        total=resources_of(ns.total_resources),
        available=resources_of(ns.available_resources),
        idle_s=ns.idle_duration_ms / 1000.0,
        status=NodeStatus.DRAINING if ns.status == _DRAINING else NodeStatus.RUNNING,
        node_id=node_id,
        labels=labels,
    )
    # resources allocated, no worker busy yet: a lease whose task is still starting
    starting = node.available != node.total and BUSY_WORKERS_ACTIVITY not in ns.node_activity
    return NodeMade(node, tuple(refused), starting)


def _age_key(node: WorkerNode, first_seen: Mapping[str, int]) -> tuple[int, str]:
    """Newer sorts higher: first seen later, then (seen in the same poll) the larger node id."""
    return _id_key(node.node_id, first_seen)


def _id_key(node_id: str, first_seen: Mapping[str, int]) -> tuple[int, str]:
    return first_seen.get(node_id, 0), node_id
