"""Our path's latency budget, hop by hop (issue 16, point 4): when each hop first showed a
scale-up, read from outside by a probe every ``PERIOD_S`` during one run of ours.

The hops of a scale-up, in the order the data flows (``docs/concepts/latency.md``):

1. ``agent poll``: the agent's first poll whose export has demand (its /metrics, read directly;
   the time is the poll's own, ``ray_scaler_snapshot_timestamp_seconds``);
2. ``in Prometheus``: the first scrape holding that demand (``timestamp()`` of the sample);
3. ``scaler answer``: KEDA's metrics adapter, asked as the HPA asks it (the external metrics
   API: adapter -> KEDA operator -> the scaler's GetMetrics, every second), first answers >= 1
   and >= the replicas the workload needs (the scaler's refresh);
4. ``RayWorkerGroup``: its ``spec.replicas`` >= 1 (KEDA's activation from zero, by its polling
   or its push) and >= needed (the HPA's sync);
5. ``RayCluster``: the group's ``replicas`` >= 1 and >= needed (the agent's KubeRay applier);
6. ``pods``: the first and the needed-th worker pod seen created and Ready (the bed's watch).

Each time is seconds after the driver's first submission; a hop not seen is ``None``. The probe
reads what the HPA would (it adds GetMetrics calls the scaler answers from memory), nothing
else; it never fails a run. Its reads cost our side CPU Ray's side is never charged (the
agent's /metrics every 0.2 s for a whole run of (a) was about 0.8 s of the agent's 3.0 s,
2026-11-28), so each read stops once its hop is seen (the agent's /metrics at its first poll
with demand, Prometheus' at the first scrape after it), and the probe once every hop was seen
(the needed pods Ready and the RayWorkerGroup at the needed replicas; at most a minute after
the pods), not at the run's end. Stopping at the pods was not enough: the HPA's sync to the
needed replicas came 15-40 s after them, 75-200 reads of the agent's /metrics.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from bench.vs_ray_bed import Bed

from pod_watch import PodEvent  # isort: skip
from real_kuberay import CLUSTER, RC, RWG  # isort: skip
from real_loop import AGENT_PORT  # isort: skip

PERIOD_S = 0.2
#: seconds the probe goes on after the needed pods are Ready, at most, for the KEDA path's hops
AFTER_READY_S = 60.0
ANSWER_EVERY = 5  # the adapter is asked through kubectl (~50 ms of CPU): every fifth round
EXTERNAL_METRICS = "/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}"


@dataclass
class Hops:
    """Unix times each hop first showed the scale-up (``None``: not seen)."""

    agent_poll: float | None = None
    in_prometheus: float | None = None
    answer_first: float | None = None
    answer_all: float | None = None
    rwg_first: float | None = None
    rwg_all: float | None = None
    rc_first: float | None = None
    rc_all: float | None = None
    pod_created_first: float | None = None
    pod_created_all: float | None = None
    pod_ready_first: float | None = None
    pod_ready_all: float | None = None
    errors: dict[str, str] = field(default_factory=dict)

    def since(self, t0: float) -> dict[str, float | None]:
        """Every hop as seconds after ``t0``."""
        return {
            k: (None if v is None else round(v - t0, 1))
            for k, v in vars(self).items()
            if k != "errors"
        }


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


Samples = list[tuple[float, float]]  # (unix time seen, value)


def _rise(samples: Samples, since: float, threshold: float) -> float | None:
    """When the value first reached ``threshold`` after ``since``, having been below it after
    ``since`` (None: never, or it was already there: no such hop in this run)."""
    below = False
    for t, v in samples:
        if t < since:
            continue
        if v < threshold:
            below = True
        elif below:
            return t
    return None


class HopProbe:
    """Reads each hop every ``PERIOD_S`` in a thread until stopped (module doc); the hops are
    made from the samples once the run says when it submitted (:meth:`hops`)."""

    def __init__(self, bed: Bed, group: str, needed: int) -> None:
        self._bed = bed
        self._group = group
        self._needed = needed
        self._agent_polls: Samples = []  # (poll time, demand bundles) as the agent exports them
        self._scrapes: Samples = []  # (scrape time, 1) of the scrapes holding demand
        self._answers: Samples = []
        self._rwg: Samples = []
        self._rc: Samples = []
        self.errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hop-probe", daemon=True)
        self._metric = ""
        self._ready_at: float | None = None

    def __enter__(self) -> HopProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("agent", self._agent),
            ("prometheus", self._prometheus),
            ("answer", self._answer),
            ("rwg", self._read_rwg),
            ("raycluster", self._raycluster),
        ]
        rounds = 0
        started = time.time()
        while not self._stop.wait(PERIOD_S) and not self._done(started):
            rounds += 1
            for name, step in steps:
                if name == "answer" and rounds % ANSWER_EVERY:  # a kubectl each: 1 s apart
                    continue
                if name in self._seen():  # its hop is seen: reading on would only cost CPU
                    continue
                try:
                    step()
                except Exception as exc:  # a probe never fails the run: the last error kept
                    self.errors[name] = f"{type(exc).__name__}: {exc}"[:200]

    def _seen(self) -> set[str]:
        """The reads whose hop is seen: the agent's once a poll exported demand (the run's
        cluster is new: its first demand follows the submission), Prometheus' once a scrape
        held it after that poll."""
        polled = next((t for t, v in self._agent_polls if v > 0), None)
        if polled is None:
            return set()
        if any(t >= polled for t, _ in self._scrapes):
            return {"agent", "prometheus"}
        return {"agent"}

    def _done(self, since: float) -> bool:
        """Whether every hop was seen: the needed pods Ready and the RayWorkerGroup at the
        needed replicas (the KEDA path's last hop; the agent's scale-up lead may make the pods
        before the HPA's sync), or :data:`AFTER_READY_S` after the pods."""
        if self._ready_at is None and self._ramped(since):
            self._ready_at = time.time()
        if self._ready_at is None:
            return False
        scaled = any(t >= since and v >= self._needed for t, v in self._rwg)
        return scaled or time.time() - self._ready_at > AFTER_READY_S

    def _ramped(self, since: float) -> bool:
        """Whether the group's needed pods became Ready after ``since``."""
        ready = {
            e.pod
            for e in list(self._bed.pods.events)
            if e.group == self._group and e.what == "ready" and e.at >= since
        }
        return len(ready) >= self._needed

    def _agent(self) -> None:
        text = requests.get(f"http://127.0.0.1:{AGENT_PORT}/metrics", timeout=2).text
        demand = sum(v for _, v in _samples(text, "ray_scaler_demand_bundles"))
        stamps = [v for _, v in _samples(text, "ray_scaler_snapshot_timestamp_seconds")]
        if stamps:
            self._agent_polls.append((max(stamps), demand))

    def _prometheus(self) -> None:
        query = f'max(timestamp(ray_scaler_demand_bundles{{cluster="{CLUSTER}"}} > 0))'
        body = requests.get(
            f"{self._bed.prometheus.url}/api/v1/query", params={"query": query}, timeout=2
        ).json()
        result = body.get("data", {}).get("result") or []
        if result:
            self._scrapes.append((float(result[0]["value"][1]), 1.0))

    def _answer(self) -> None:
        value = self._external_metric()
        if value is not None:
            self._answers.append((time.time(), value))

    def _external_metric(self) -> float | None:
        """What KEDA's metrics adapter answers the HPA for the group's ScaledObject."""
        name = f"ray-{CLUSTER}-{self._group}"
        if not self._metric:
            so: dict[str, Any] = self._bed.custom.get_namespaced_custom_object(
                "keda.sh", "v1alpha1", "ray", "scaledobjects", name
            )
            metrics = (so.get("status") or {}).get("externalMetricNames") or []
            if not metrics:
                return None
            self._metric = str(metrics[0])
        path = EXTERNAL_METRICS.format(ns="ray", metric=self._metric)
        selector = f"scaledobject.keda.sh/name={name}"
        out = self._bed.cp.kubectl("get", "--raw", f"{path}?labelSelector={selector}", check=False)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip()[:200])
        body: Any = json.loads(out.stdout)
        items = body.get("items") or []
        return max((_quantity(i.get("value", "0")) for i in items), default=None)

    def _read_rwg(self) -> None:
        rwg: dict[str, Any] = self._bed.custom.get_namespaced_custom_object(
            RWG[0], RWG[1], "ray", RWG[2], f"ray-{CLUSTER}-{self._group}"
        )
        self._rwg.append((time.time(), float((rwg.get("spec") or {}).get("replicas") or 0)))

    def _raycluster(self) -> None:
        rc: dict[str, Any] = self._bed.custom.get_namespaced_custom_object(
            RC[0], RC[1], "ray", RC[2], CLUSTER
        )
        groups = (rc.get("spec") or {}).get("workerGroupSpecs") or []
        replicas = max(
            (int(g.get("replicas") or 0) for g in groups if g.get("groupName") == self._group),
            default=0,
        )
        self._rc.append((time.time(), float(replicas)))

    def hops(self, events: Iterable[PodEvent], since: float) -> Hops:
        """Each hop's first time after ``since`` (the driver's first submission)."""
        polls = sorted(self._agent_polls)
        agent = next((t for t, v in polls if t >= since and v > 0), None)
        scrape = next((t for t, _ in sorted(self._scrapes) if agent and t >= agent), None)
        n = self._needed
        hops = Hops(
            agent_poll=agent,
            in_prometheus=scrape,
            answer_first=_rise(self._answers, since, 1),
            answer_all=_rise(self._answers, since, n),
            rwg_first=_rise(self._rwg, since, 1),
            rwg_all=_rise(self._rwg, since, n),
            rc_first=_rise(self._rc, since, 1),
            rc_all=_rise(self._rc, since, n),
            errors=dict(self.errors),
        )
        mine = [e for e in events if e.group == self._group and e.at >= since]
        for what, first, nth in (
            ("created", "pod_created_first", "pod_created_all"),
            ("ready", "pod_ready_first", "pod_ready_all"),
        ):
            times = sorted(e.at for e in mine if e.what == what)
            setattr(hops, first, times[0] if times else None)
            setattr(hops, nth, times[n - 1] if len(times) >= n else None)
        return hops


def _quantity(value: str) -> float:
    """A Kubernetes quantity as the adapter writes it (``10``, ``10500m``)."""
    return float(value[:-1]) / 1000 if value.endswith("m") else float(value)


#: the hops in order, with what each measures: (label, start field, end field)
BUDGET: tuple[tuple[str, str, str], ...] = (
    ("submit -> agent poll", "", "agent_poll"),
    ("agent poll -> Prometheus scrape", "agent_poll", "in_prometheus"),
    ("scrape -> scaler answers >= 1 (refresh)", "in_prometheus", "answer_first"),
    ("answer >= 1 -> RayWorkerGroup >= 1 (KEDA activation)", "answer_first", "rwg_first"),
    ("RayWorkerGroup >= 1 -> RayCluster >= 1 (applier)", "rwg_first", "rc_first"),
    ("RayCluster >= 1 -> first pod created (KubeRay)", "rc_first", "pod_created_first"),
    ("first pod created -> Ready", "pod_created_first", "pod_ready_first"),
    ("RayWorkerGroup >= 1 -> >= needed (HPA sync)", "rwg_first", "rwg_all"),
    ("RayWorkerGroup >= needed -> RayCluster >= needed (applier)", "rwg_all", "rc_all"),
    ("RayCluster >= needed -> needed-th pod created (KubeRay)", "rc_all", "pod_created_all"),
    ("needed-th pod created -> all needed Ready", "pod_created_all", "pod_ready_all"),
    ("submit -> all needed pods Ready", "", "pod_ready_all"),
)


def budget_lines(hops: Hops, t0: float) -> list[str]:
    """One line per hop: its seconds (``-`` where an end was not seen)."""
    times: dict[str, float | None] = {"": t0, **{k: v for k, v in vars(hops).items()}}
    lines = []
    for label, start, end in BUDGET:
        a, b = times.get(start), times.get(end)
        value = "-" if a is None or b is None else f"{b - a:.1f} s"
        lines.append(f"  {label}: {value}")
    if hops.errors:
        lines.append(f"  (probe errors: {hops.errors})")
    return lines
