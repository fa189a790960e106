"""The two settings the side-by-side benchmark runs at (issue 16; design doc §4).

``PRODUCTION`` is what ships: the controller-manager's default HPA sync (15 s), the ScaledObjects,
the agent's and the scaler's flags and the groups' ``idleTimeoutSeconds`` exactly as
``manifests/kuberay/example`` and the Helm chart have them (``None`` below: the shipped value is
left alone), Prometheus scraping the agent every 5 s (``podMonitor.agentInterval``), and Ray's
own defaults (loop 5 s, upscaling mode Default). ``FAST`` is the test bed's: every hop about one
second, idle timeouts 5 s, Ray's loop 1 s (``AUTOSCALER_UPDATE_INTERVAL_S`` is an integer).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """One set of timings for both sides; ``None`` keeps the shipped value."""

    name: str
    hpa_sync_s: float  # kube-controller-manager --horizontal-pod-autoscaler-sync-period
    scrape_s: float  # Prometheus' scrape of the agent
    refresh_s: int  # the scaler's refreshIntervalSeconds (chart value)
    agent_interval_s: float | None  # the agent's --interval (5 s by default)
    settle_s: float | None  # the agent's --settle-delay (5 s by default)
    polling_s: int | None  # ScaledObject pollingInterval (5 s shipped)
    cooldown_s: int | None  # ScaledObject cooldownPeriod (5 s shipped in the KubeRay example)
    down_window_s: int | None  # HPA scaleDown window (0 s in the KubeRay example)
    idle_s: int | None  # the groups' idleTimeoutSeconds, read by both sides (60 s / 300 s)
    ray_loop_s: int | None  # Ray's AUTOSCALER_UPDATE_INTERVAL_S (5 s by default)


PRODUCTION = Profile("production", 15.0, 5.0, 5, None, None, None, None, None, None, None)
#: the scale-down window left as shipped (none in the KubeRay example): a faster hop is not a window
FAST = Profile("fast", 2.0, 1.0, 1, 1.0, 1.0, 2, 5, None, 5, 1)
PROFILES = {p.name: p for p in (PRODUCTION, FAST)}
