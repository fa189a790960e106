"""The flags of ``keda-ray-scaler controller`` and their checks, read into its settings.

``add_parser`` registers them (building the parser imports this module alone: no kubernetes, no
structlog); :func:`controller_settings` turns them into
:class:`~keda_ray_scaler.controller.settings.ControllerSettings`, a bad value a
:class:`~keda_ray_scaler.errors.ConfigError` naming the flag. Each default is read from the
settings or the template, never written here. The command itself is
:mod:`keda_ray_scaler.cli.controller`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from keda_ray_scaler.cli import add_command, add_logging_flags
from keda_ray_scaler.controller.settings import ControllerSettings
from keda_ray_scaler.controller.sidecar import AGENT_CONTAINER
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.errors import ConfigError

WHERE: Final = "controller"
#: the /metrics port when no flag says (the scaler's is 9100, the agent's 8080)
DEFAULT_METRICS_PORT: Final = 9102
_DESCRIPTION: Final = (
    "For each RayCluster opted in with the annotation keda-ray-scaler.io/autoscaling: enabled, "
    "in the namespaces given, make and keep its RayWorkerGroups, ScaledObjects and the agent's "
    "ServiceAccount, Role and RoleBinding, owned by the RayCluster; refuse, with an event on "
    "it, a cluster that cannot be served."
)
#: the settings' and the template's fields, by the flag that sets each
_FLAG_OF: Final[Mapping[str, str]] = {
    "namespaces": "--namespace",
    "resync_s": "--resync",
    "scaler_address": "--scaler-address",
    "polling_interval_s": "--polling-interval",
    "cooldown_period_s": "--cooldown-period",
    "trigger_authentication": "--trigger-authentication",
    "instance": "--instance",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``controller`` and its flags."""
    add_command(
        subparsers,
        "controller",
        _DESCRIPTION,
        _serving_flags,
        _template_flags,
        _webhook_flags,
        _process_flags,
    )


def _serving_flags(p: argparse.ArgumentParser) -> None:
    """Which RayClusters, how often."""
    g = p.add_argument_group("what is served")
    g.add_argument(
        "--namespace",
        action="append",
        default=[],
        help="a namespace whose RayClusters are served; at least one (no cluster-wide mode)",
    )
    settings = ControllerSettings(namespaces=("n",))
    g.add_argument(
        "--resync",
        type=float,
        default=settings.resync_s,
        help="seconds between full passes over every RayCluster; a watch event is acted on at "
        f"once ({settings.resync_s:g})",
    )


def _template_flags(p: argparse.ArgumentParser) -> None:
    """What every ScaledObject shares (a cluster's annotations override the first three)."""
    g = p.add_argument_group("scaledobjects")
    template = ControllerTemplate()
    g.add_argument(
        "--scaler-address",
        default=template.scaler_address,
        help="the triggers' scalerAddress, host:port "
        "(annotation keda-ray-scaler.io/scaler-address)",
    )
    g.add_argument(
        "--polling-interval",
        type=int,
        default=template.polling_interval_s,
        help="pollingInterval, seconds (annotation keda-ray-scaler.io/polling-interval)",
    )
    g.add_argument(
        "--cooldown-period",
        type=int,
        default=template.cooldown_period_s,
        help="cooldownPeriod, seconds (annotation keda-ray-scaler.io/cooldown-period)",
    )
    g.add_argument(
        "--trigger-authentication",
        default=template.trigger_authentication,
        help="the ClusterTriggerAuthentication holding KEDA's client key; '' for none",
    )


def _webhook_flags(p: argparse.ArgumentParser) -> None:
    """The agent-sidecar webhook: off unless --webhook-port is given."""
    g = p.add_argument_group("webhook (the agent sidecar injected into opted-in heads)")
    g.add_argument(
        "--webhook-port",
        type=int,
        default=-1,
        help="HTTPS port of POST /mutate-raycluster (on --webhook-host); -1: no webhook (-1)",
    )
    g.add_argument("--webhook-host", default="0.0.0.0", help="webhook bind address (all)")
    g.add_argument("--webhook-cert", type=Path, help="the webhook's TLS certificate (PEM)")
    g.add_argument("--webhook-key", type=Path, help="the webhook's TLS key (PEM)")
    g.add_argument(
        "--sidecar-fragment",
        type=Path,
        help="the agent sidecar, a pod template fragment (the chart's controller ConfigMap)",
    )


def webhook_inputs(args: argparse.Namespace) -> tuple[Path, Path, dict[str, Any]] | None:
    """``(cert, key, fragment)`` with --webhook-port, else None; ConfigError naming the flag
    (a missing file, a fragment that is no pod template with an ``agent`` container)."""
    if args.webhook_port < 0:
        return None
    if args.webhook_port > 65535:
        raise ConfigError(WHERE, "--webhook-port", f"{args.webhook_port} is not a port (or -1)")
    for flag in ("--webhook-cert", "--webhook-key", "--sidecar-fragment"):
        path = getattr(args, flag.removeprefix("--").replace("-", "_"))
        if path is None or not path.is_file():
            raise ConfigError(
                WHERE, flag, f"{path} is not a file" if path else "required with --webhook-port"
            )
    try:
        fragment = yaml.safe_load(args.sidecar_fragment.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            WHERE, "--sidecar-fragment", f"{args.sidecar_fragment}: {str(exc).splitlines()[0]}"
        ) from None
    containers = (
        ((fragment or {}).get("spec") or {}).get("containers")
        if isinstance(fragment, dict)
        else None
    )
    if not isinstance(containers, list) or not any(
        isinstance(c, dict) and c.get("name") == AGENT_CONTAINER for c in containers
    ):
        raise ConfigError(
            WHERE,
            "--sidecar-fragment",
            f"{args.sidecar_fragment}: no spec.containers entry named {AGENT_CONTAINER!r}",
        )
    return args.webhook_cert, args.webhook_key, fragment


def _process_flags(p: argparse.ArgumentParser) -> None:
    """Kubernetes access, /metrics, events."""
    g = p.add_argument_group("process")
    g.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster service account)"
    )
    g.add_argument("--context", help="kubeconfig context")
    g.add_argument("--host", default="127.0.0.1", help="/metrics bind address (127.0.0.1)")
    g.add_argument(
        "--metrics-port",
        type=int,
        default=DEFAULT_METRICS_PORT,
        help=f"/metrics port; -1 disables ({DEFAULT_METRICS_PORT})",
    )
    g.add_argument(
        "--instance",
        default="",
        help="the events' reportingInstance, e.g. the pod's name (default: the component's)",
    )
    add_logging_flags(p)


def controller_settings(args: argparse.Namespace) -> ControllerSettings:
    """The settings the flags give; ConfigError naming the flag."""
    if not args.namespace:
        raise ConfigError(
            WHERE, "--namespace", "required: a namespace whose RayClusters are served"
        )
    if not -1 <= args.metrics_port <= 65535:
        raise ConfigError(WHERE, "--metrics-port", f"{args.metrics_port} is not a port (or -1)")
    try:
        template = ControllerTemplate(
            scaler_address=args.scaler_address,
            polling_interval_s=args.polling_interval,
            cooldown_period_s=args.cooldown_period,
            trigger_authentication=args.trigger_authentication or None,
        )
        return ControllerSettings(
            namespaces=tuple(args.namespace),
            template=template,
            resync_s=args.resync,
            instance=args.instance,
        )
    except ConfigError as exc:
        raise ConfigError(WHERE, _FLAG_OF.get(exc.field, exc.field), exc.problem) from None
