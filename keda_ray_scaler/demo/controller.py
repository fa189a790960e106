"""A simulated Deployment (one ReplicaSet) for one worker group: pods are worker raylets.

Scaling up creates pods and starts one ``ray start --block`` per pod, one after the other
(the "kubelet"). Scaling down deletes
pods in the order the real ReplicaSet controller would (:func:`ranking.deletion_order`, so the
lowest ``controller.kubernetes.io/pod-deletion-cost`` goes first), stopping each raylet by PID.
All pods run on one "node", as on a one-node kind cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass

from keda_ray_scaler.agent.pod import PodInfo
from keda_ray_scaler.agent.victims.ranking import deletion_order
from keda_ray_scaler.clock import Clock
from keda_ray_scaler.demo.pods import DemoPods
from keda_ray_scaler.demo.raylets import RayProcesses


@dataclass(frozen=True, slots=True)
class Deletion:
    """One pod the ReplicaSet deleted, with its deletion cost at that moment."""

    pod: str
    cost: int
    at_s: float


class DeploymentController:
    """Keeps ``replicas`` worker pods of one group alive."""

    def __init__(
        self,
        name: str,
        group: str,
        num_cpus: int,
        pods: DemoPods,
        ray: RayProcesses,
        clock: Clock,
    ) -> None:
        self.name = name
        self.group = group
        self._num_cpus = num_cpus
        self._pods = pods
        self._ray = ray
        self._clock = clock
        self._serial = 0
        self.replicas = 0
        self.deletions: list[Deletion] = []
        self._starting = asyncio.Lock()  # the "kubelet" starts one raylet at a time
        self._tasks: set[asyncio.Task[None]] = set()

    async def _start(self, names: list[str], socket_timeout_s: float = 30.0) -> None:
        """Start the pods' raylets one after the other (see RayProcesses.sockets)."""
        async with self._starting:
            for name in names:
                if self._pods.get_cached(name) is None:  # deleted before it started
                    continue
                plasma, raylet = self._ray.sockets()
                proc = self._ray.start_worker(name, self.group, self._num_cpus)
                deadline = self._clock.now() + socket_timeout_s
                while proc.alive() and self._clock.now() < deadline:
                    now_plasma, now_raylet = self._ray.sockets()
                    if now_plasma > plasma and now_raylet > raylet:
                        break
                    await self._clock.sleep(0.1)

    async def aclose(self) -> None:
        """Cancel raylet starts still queued."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def heal(self, registered: set[str]) -> list[str]:
        """Restart raylets that exited before their Ray node ever registered (startup failed).

        A raylet that exits after registering (drained, or killed) is left alone: its pod is on
        its way out, as a crash-looping container would be until the scale-down deletes it.
        """
        restarted: list[str] = []
        if self._starting.locked():
            return restarted
        for pod in self._ray.exited():
            info = self._pods.get_cached(pod)
            if info is None or pod in registered:
                continue
            self._ray.restart_worker(pod, self.group, self._num_cpus)
            self._pods.add(dataclasses.replace(info, restarts=info.restarts + 1))
            restarted.append(pod)
            break  # one at a time, as _start does
        return restarted

    def current(self) -> list[str]:
        """Names of the group's pods."""
        return [p.name for p in self._pods.pods() if p.group == self.group]

    async def scale(self, replicas: int) -> tuple[list[str], list[Deletion]]:
        """Set the replica count; the pods created and the deletions made."""
        self.replicas = replicas
        pods = [p for p in self._pods.pods() if p.group == self.group]
        created = self._create(replicas - len(pods))
        deleted: list[Deletion] = []
        now = self._clock.now()
        if len(pods) > replicas:
            for pod in deletion_order(pods, now)[: len(pods) - replicas]:
                deleted.append(Deletion(pod.name, pod.deletion_cost, now))
                self._pods.remove(pod.name)
            # Stopping a raylet waits for the process: in threads, all at once.
            await asyncio.gather(
                *(asyncio.to_thread(self._ray.stop_worker, d.pod) for d in deleted)
            )
        self.deletions += deleted
        return created, deleted

    async def replace_deleted(self) -> tuple[list[str], list[str]]:
        """Pods deleted by someone else (the agent releasing a victim): their raylets stopped
        (the kubelet), as many new pods made (the ReplicaSet); (stopped, created)."""
        mine = {p.name for p in self._pods.pods() if p.group == self.group}
        gone = [pod for pod in self._ray.workers if pod.startswith(f"{self.name}-")]
        gone = [pod for pod in gone if pod not in mine]
        await asyncio.gather(*(asyncio.to_thread(self._ray.stop_worker, pod) for pod in gone))
        return gone, self._create(self.replicas - len(mine))

    def _create(self, count: int) -> list[str]:
        """``count`` new pods, their raylets started in the background; their names."""
        created: list[str] = []
        now = self._clock.now()
        for _ in range(count):
            self._serial += 1
            name = f"{self.name}-{self._serial:05d}"
            self._pods.add(
                PodInfo(
                    name=name,
                    uid=f"{self.name}-uid-{self._serial:05d}",
                    group=self.group,
                    node_name="demo-node",
                    phase="Running",
                    ready=True,
                    ready_since_s=now,
                    created_s=now,
                    owner=f"ReplicaSet/{self.name}",
                )
            )
            created.append(name)
        if created:
            task = asyncio.create_task(self._start(created))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return created
