"""The flags of ``keda-ray-scaler agent`` and the checks of them a parser type cannot make.

``add_parser`` registers them (:mod:`keda_ray_scaler.cli` imports this module alone to build the
parser, so ``agent --help`` and a bad flag load neither structlog nor the Prometheus client);
``validate`` and ``join_settings`` raise :class:`~keda_ray_scaler.errors.ConfigError` naming the
flag; ``agent_settings`` turns them into the agent's settings. Each default is read from the
agent's settings, never written here (:mod:`keda_ray_scaler.agent.settings` says where each is
declared). The agent itself is :mod:`keda_ray_scaler.cli.agent`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Final

from keda_ray_scaler.agent.http.agent_health import DEFAULT_INTERVALS, MIN_MAX_AGE_S
from keda_ray_scaler.agent.joining.joins import DEFAULT_JOIN_TIMEOUT_S, BackoffSettings
from keda_ray_scaler.agent.kube.kube_settings import GROUP_LABEL, worker_selector
from keda_ray_scaler.agent.ray.demand_filter import DEFAULT_WINDOW_S
from keda_ray_scaler.agent.ray.ray_state import (
    GCS_TIMEOUT_S,
    POLL_INTERVAL_S,
    WATCH_INTERVAL_S,
    DemandRead,
)
from keda_ray_scaler.agent.ray.shape_bound import DEFAULT_MAX_SHAPES
from keda_ray_scaler.agent.victims.marks import VictimSettings
from keda_ray_scaler.cli import add_command, add_logging_flags
from keda_ray_scaler.cli.seal_key import key_file
from keda_ray_scaler.errors import ConfigError

if TYPE_CHECKING:
    from keda_ray_scaler.agent.joining.join_tracker import JoinSettings
    from keda_ray_scaler.agent.settings import AgentSettings

#: The ``where`` of the agent's ConfigErrors: its flags' and its start-up's.
WHERE: Final = "agent"
#: What ``agent --help`` says the command does.
_DESCRIPTION: Final = (
    "Poll one Ray cluster's GCS, serve /metrics and /healthz, run safe scale-down."
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``agent`` and its flags (:data:`_FLAG_GROUPS`)."""
    add_command(subparsers, "agent", _DESCRIPTION, *_FLAG_GROUPS)


def _ray_flags(p: argparse.ArgumentParser) -> None:
    """Which Ray cluster, how it is read."""
    g = p.add_argument_group("ray")
    g.add_argument(
        "--cluster-spec",
        type=Path,
        help="worker groups file (the format of `plan --cluster`); Deployment mode",
    )
    g.add_argument(
        "--raycluster",
        help="KubeRay mode: the RayCluster (in --namespace) whose worker groups, resources and "
        "bounds are read and watched (an edit is planned at the next poll), and whose "
        "RayWorkerGroups are reconciled (instead of --cluster-spec)",
    )
    g.add_argument(
        "--gcs-address", default="127.0.0.1:6379", help="Ray GCS host:port (127.0.0.1:6379)"
    )
    g.add_argument(
        "--interval",
        type=float,
        default=POLL_INTERVAL_S,
        help=f"seconds between polls at most ({POLL_INTERVAL_S:g})",
    )
    g.add_argument(
        "--watch-interval",
        type=float,
        default=WATCH_INTERVAL_S,
        help="seconds between cheap looks at the GCS between polls; demand that rose or nodes "
        "that changed are polled at once; 0 = none, poll every --interval only "
        f"({WATCH_INTERVAL_S:g})",
    )
    g.add_argument(
        "--ray-timeout",
        type=float,
        default=GCS_TIMEOUT_S,
        help=f"deadline of one GCS call in seconds ({GCS_TIMEOUT_S:g})",
    )
    g.add_argument(
        "--max-shapes",
        type=int,
        default=DEFAULT_MAX_SHAPES,
        help="at most this many demand series; more are merged upward and counted "
        f"({DEFAULT_MAX_SHAPES})",
    )
    g.add_argument(
        "--demand-read",
        choices=[d.value for d in DemandRead],
        default=DemandRead.EXACT.value,
        help="where pending task demand comes from: 'exact' reads the head raylet's queue "
        "(GetResourceLoad) after the cluster status, so a task starting on a new node is not "
        "also pending; 'gcs' takes the GCS's sum as Ray's autoscaler does; exact falls back to "
        "gcs for a poll whose raylet read fails, counted (exact)",
    )
    g.add_argument(
        "--use-window",
        type=float,
        default=DEFAULT_WINDOW_S,
        help="seconds a rise of pod use that pending demand did not pay for is taken for a "
        "task Ray counts both running and pending until its owner's next backlog report (left "
        f"out of the exported demand); 0 = as read ({DEFAULT_WINDOW_S:g})",
    )


def _metrics_flags(p: argparse.ArgumentParser) -> None:
    """Where /metrics and /healthz are served."""
    g = p.add_argument_group("metrics and health")
    g.add_argument(
        "--seal-key-file",
        type=Path,
        help="this cluster's seal key (hex; `keda-ray-scaler seal-key` derives it from the "
        "scaler's master key): the snapshot digest is keyed, so only this agent can seal its "
        "series (serve --seal-master-key-file); unset: unkeyed",
    )
    g.add_argument("--host", default="0.0.0.0", help="/metrics and /healthz bind address (all)")
    g.add_argument("--port", type=int, default=8080, help="/metrics and /healthz port (8080)")
    g.add_argument(
        "--health-intervals",
        type=float,
        default=DEFAULT_INTERVALS,
        help="/healthz answers 503 when the last successful poll of Ray is older than this "
        f"many --interval, and at least {MIN_MAX_AGE_S:g} s (one GCS hiccup is no failure) "
        f"({DEFAULT_INTERVALS:g})",
    )


def _scale_down_flags(p: argparse.ArgumentParser) -> None:
    """Kubernetes access for drain-then-mark scale-down and pods that do not join."""
    g = p.add_argument_group("kubernetes (scale-down)")
    g.add_argument(
        "--no-scale-down",
        action="store_true",
        help="export only: no Kubernetes access, no drain, no victims",
    )
    g.add_argument("--namespace", help="namespace of the worker pods (required for scale-down)")
    g.add_argument(
        "--label-selector",
        help=f"selects this cluster's worker pods (default: {worker_selector('<cluster>')})",
    )
    g.add_argument("--group-label", default=GROUP_LABEL, help="pod label naming the group")
    g.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster service account)"
    )
    g.add_argument("--context", help="kubeconfig context")
    victims = VictimSettings()
    g.add_argument(
        "--settle-delay",
        type=float,
        default=victims.settle_s,
        help="seconds to wait after deletion costs are seen before draining "
        f"({victims.settle_s:g})",
    )
    g.add_argument(
        "--drain-deadline",
        type=float,
        default=victims.drain_deadline_s,
        help="drain deadline in seconds after now; 0 = none, as Ray's autoscaler "
        f"({victims.drain_deadline_s:g})",
    )
    _failure_flags(g)
    _lead_flags(g)


def _failure_flags(g: argparse._ArgumentGroup) -> None:
    """Pods that do not join Ray: when they are failing, and the group's back-off."""
    g.add_argument(
        "--join-timeout",
        action="append",
        default=[],
        metavar="[GROUP=]SECONDS",
        help="a worker pod with no Ray node this long after its creation is failing and "
        f"removed without a drain; GROUP= for one group, repeatable ({DEFAULT_JOIN_TIMEOUT_S:g}, "
        "Ray v2's)",
    )
    backoff = BackoffSettings()
    g.add_argument(
        "--backoff-initial",
        type=float,
        default=backoff.initial_s,
        help="seconds a group gets no new pods after a failed launch; doubles per failed launch",
    )
    g.add_argument(
        "--backoff-max",
        type=float,
        default=backoff.max_s,
        help=f"the longest back-off in seconds ({backoff.max_s:g})",
    )


def _lead_flags(g: argparse._ArgumentGroup) -> None:
    """KubeRay mode: the agent's own plan carried into the RayCluster ahead of the HPA."""
    g.add_argument(
        "--scale-up-lead",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="KubeRay mode: carry the agent's own planned target into the RayCluster at its "
        "poll, ahead of the HPA; upward only, within the ScaledObject's maxReplicaCount and "
        "scale-up policies, never while it is paused (on)",
    )
    g.add_argument(
        "--scale-down-lead",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="KubeRay mode: delete drained victims at the agent's poll, ahead of the HPA, "
        "where the ScaledObject sets no scale-down window; never below its minReplicaCount or "
        "scale-down policies, to zero only after its cooldownPeriod, never while paused (on)",
    )


#: The flag groups of ``agent``, in ``--help`` order.
_FLAG_GROUPS: Final = (_ray_flags, _metrics_flags, _scale_down_flags, add_logging_flags)


def _check(ok: bool, flag: str, problem: str) -> None:
    if not ok:
        raise ConfigError(WHERE, flag, problem)


def join_settings(args: argparse.Namespace) -> JoinSettings:
    """``--join-timeout`` values and the back-off flags; raises :class:`ConfigError`."""
    # here, not at the top: structlog and the Prometheus client come with it (module docstring)
    from keda_ray_scaler.agent.joining.join_tracker import JoinSettings

    default, per_group = DEFAULT_JOIN_TIMEOUT_S, {}
    for value in args.join_timeout:
        group, _, seconds = str(value).rpartition("=")
        try:
            timeout = float(seconds)
        except ValueError:
            timeout = -1.0
        _check(
            timeout > 0 and math.isfinite(timeout),
            "--join-timeout",
            f"expected [GROUP=]SECONDS with SECONDS > 0, got {str(value)[:80]!r}",
        )
        if group:
            per_group[group] = timeout
        else:
            default = timeout
    backoff = BackoffSettings(args.backoff_initial, args.backoff_max)
    return JoinSettings(default, per_group, backoff)


def agent_settings(args: argparse.Namespace) -> AgentSettings:
    """The agent's settings from its flags (checked by :func:`validate` first)."""
    # here, not at the top: the loop's module loads structlog and the Prometheus client
    from keda_ray_scaler.agent.loop import LoopSettings
    from keda_ray_scaler.agent.settings import AgentSettings

    return AgentSettings(
        loop=LoopSettings(
            interval_s=args.interval,
            watch_interval_s=args.watch_interval,
            max_shapes=args.max_shapes,
            scale_down=not args.no_scale_down,
            use_window_s=args.use_window,
        ),
        victims=VictimSettings(settle_s=args.settle_delay, drain_deadline_s=args.drain_deadline),
        joins=join_settings(args),
        ray_timeout_s=args.ray_timeout,
        demand_read=DemandRead(args.demand_read),
        seal_key=seal_key(args.seal_key_file),
    )


def seal_key(path: Path | None) -> bytes | None:
    """The key of ``--seal-key-file`` (None without one); raises :class:`ConfigError` naming the
    flag and the file when it cannot be read or holds no key (the key itself never printed)."""
    return None if path is None else key_file(path, "--seal-key-file", WHERE)


def validate(args: argparse.Namespace) -> None:
    """Flag values a parser type cannot check; raises :class:`ConfigError` naming the flag."""
    _check(args.interval > 0, "--interval", f"must be > 0, got {args.interval:g}")
    _check(
        0 <= args.watch_interval < math.inf,
        "--watch-interval",
        f"must be >= 0, got {args.watch_interval:g}",
    )
    _check(args.ray_timeout > 0, "--ray-timeout", f"must be > 0, got {args.ray_timeout:g}")
    _check(args.use_window >= 0, "--use-window", f"must be >= 0, got {args.use_window:g}")
    _check(
        args.backoff_initial > 0, "--backoff-initial", f"must be > 0, got {args.backoff_initial:g}"
    )
    _check(
        args.backoff_max >= args.backoff_initial,
        "--backoff-max",
        f"must be >= --backoff-initial, got {args.backoff_max:g}",
    )
    join_settings(args)
    seal_key(args.seal_key_file)
    _check(args.max_shapes >= 3, "--max-shapes", f"must be >= 3, got {args.max_shapes}")
    _check(0 <= args.port <= 65535, "--port", f"must be 0..65535, got {args.port}")
    _check(
        args.health_intervals > 0 and math.isfinite(args.health_intervals),
        "--health-intervals",
        f"must be > 0, got {args.health_intervals:g}",
    )
    _check(args.settle_delay >= 0, "--settle-delay", f"must be >= 0, got {args.settle_delay:g}")
    _check(
        args.drain_deadline >= 0,
        "--drain-deadline",
        f"must be >= 0, got {args.drain_deadline:g}",
    )
    host, sep, port = args.gcs_address.rpartition(":")
    _check(
        bool(sep and host and port.isdigit()),
        "--gcs-address",
        f"not host:port: {args.gcs_address!r}",
    )
    if not args.no_scale_down:
        _check(bool(args.namespace), "--namespace", "required unless --no-scale-down")
    _check(
        (args.cluster_spec is None) != (args.raycluster is None),
        "--cluster-spec",
        "give exactly one of --cluster-spec (Deployment mode) and --raycluster (KubeRay mode)",
    )
    if args.raycluster is not None:
        _check(bool(args.namespace), "--namespace", "required with --raycluster")
