"""A RayCluster's opt-in to keda-ray-scaler, and its per-cluster overrides, read from its metadata.

The label ``keda-ray-scaler.io/autoscaling: "enabled"`` (or ``"true"``) opts a RayCluster in (a
label, so the webhook that adds the agent sidecar selects exactly the opted-in clusters; KubeRay
copies a RayJob's and a RayService's labels to the clusters it makes). An annotation of the same
key is read where the label is absent (the controller serves it, but the webhook is not called
for it: use the label). Absent,
``"disabled"`` or ``"false"`` leaves it out; any other value is refused (a typo must not read as
"off" without a word). An opted-in cluster may override the chart's ScaledObject settings with
``polling-interval`` and ``cooldown-period`` (whole seconds, bounded); a bad override refuses the
cluster, naming the annotation and its value. ``scaler-address`` is refused whatever its value:
the scaler's address is the chart's (an editor of a RayCluster must not point KEDA, which
presents its client certificate, at a host of its choosing). A
cluster that also runs Ray's own autoscaler (``spec.enableInTreeAutoscaling: true``) is refused:
two autoscalers would fight over its replicas. Annotation values are untrusted (anyone who may
edit the RayCluster writes them): they are shown escaped and truncated. Pure: no I/O.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: The opt-in label of a RayCluster (the webhook's objectSelector).
OPT_IN_LABEL: Final = "keda-ray-scaler.io/autoscaling"
#: The same key as an annotation, read where the label is absent.
OPT_IN_ANNOTATION: Final = OPT_IN_LABEL
#: Per-cluster override of the ScaledObjects' ``pollingInterval`` (whole seconds).
POLLING_INTERVAL_ANNOTATION: Final = "keda-ray-scaler.io/polling-interval"
#: Per-cluster override of the ScaledObjects' ``cooldownPeriod`` (whole seconds).
COOLDOWN_PERIOD_ANNOTATION: Final = "keda-ray-scaler.io/cooldown-period"
#: Per-cluster override of the triggers' ``scalerAddress`` (``host:port``).
SCALER_ADDRESS_ANNOTATION: Final = "keda-ray-scaler.io/scaler-address"

#: ``pollingInterval`` bounds, seconds: KEDA polls at least once a second; an hour between polls
#: would leave a queue of tasks unseen longer than any Ray job waits.
POLLING_INTERVAL_BOUNDS_S: Final = (1, 3600)
#: ``cooldownPeriod`` bounds, seconds: a day is longer than any idle pod should be kept.
COOLDOWN_PERIOD_BOUNDS_S: Final = (1, 86400)

_ON: Final = frozenset({"enabled", "true"})
_OFF: Final = frozenset({"disabled", "false"})
_SHOWN_CHARS: Final = 64
_HOST_PORT: Final = re.compile(r"(?P<host>\[[0-9a-fA-F:.]+\]|[^:\[\]]+):(?P<port>[0-9]{1,5})")
#: RFC 1123 subdomain (a Service's DNS name): lowercase labels joined by dots, 253 at most.
_DNS_SUBDOMAIN: Final = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*"
)
_SECONDS: Final = re.compile(r"[0-9]{1,9}")
IN_TREE_FIELD: Final = "spec.enableInTreeAutoscaling"


class Invalid(enum.Enum):
    """Why an annotation's value is refused."""

    #: the opt-in annotation is none of enabled, true, disabled, false
    UNKNOWN_VALUE = "unknown_value"
    #: an annotation no RayCluster may set (the scaler's address)
    NOT_ALLOWED = "not_allowed"
    #: an interval is not a whole number of seconds
    NOT_AN_INTEGER = "not_an_integer"
    #: an interval is outside its bounds
    OUT_OF_BOUNDS = "out_of_bounds"
    #: the scaler address is not ``host:port``
    NOT_HOST_PORT = "not_host_port"


class Conflict(enum.Enum):
    """Why an opted-in cluster cannot be served as it is."""

    #: ``spec.enableInTreeAutoscaling: true``: Ray's own autoscaler already scales it
    IN_TREE_AUTOSCALER = "in_tree_autoscaler"


@dataclass(frozen=True, slots=True)
class OptIn:
    """An opted-in cluster and its overrides of the chart's settings (None: the chart's)."""

    polling_interval_s: int | None = None
    cooldown_period_s: int | None = None


@dataclass(frozen=True, slots=True)
class NotOptedIn:
    """A cluster left alone: the opt-in annotation's value (None: absent)."""

    value: str | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A cluster refused: why, the annotation or field, its value (escaped) and what to change."""

    reason: Invalid | Conflict
    field: str
    value: str
    message: str


def printable(text: str) -> str:
    """Untrusted text made safe for an event or a condition: escaped and truncated."""
    shown = text[:_SHOWN_CHARS].encode("unicode_escape").decode("ascii")
    return shown + ("..." if len(text) > _SHOWN_CHARS else "")


def read_opt_in(metadata: Mapping[str, Any]) -> OptIn | NotOptedIn | Refusal:
    """The decision a RayCluster's ``metadata`` (its annotations) gives; overrides are read only
    when the cluster opts in (module doc)."""
    notes = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    raw = labels.get(OPT_IN_LABEL, notes.get(OPT_IN_ANNOTATION))
    if raw is None:
        return NotOptedIn()
    value = str(raw)
    if value.lower() in _OFF:
        return NotOptedIn(value)
    if value.lower() not in _ON:
        return _refuse(
            Invalid.UNKNOWN_VALUE, OPT_IN_ANNOTATION, value, 'use "enabled" or "disabled"'
        )
    polling = _seconds(notes, POLLING_INTERVAL_ANNOTATION, POLLING_INTERVAL_BOUNDS_S)
    if isinstance(polling, Refusal):
        return polling
    cooldown = _seconds(notes, COOLDOWN_PERIOD_ANNOTATION, COOLDOWN_PERIOD_BOUNDS_S)
    if isinstance(cooldown, Refusal):
        return cooldown
    address = notes.get(SCALER_ADDRESS_ANNOTATION)
    if address is not None:
        return _refuse(
            Invalid.NOT_ALLOWED,
            SCALER_ADDRESS_ANNOTATION,
            str(address),
            "the scaler's address is the chart's (controller --scaler-address), not a "
            "RayCluster's: whoever edits one could point KEDA, with its client certificate, at "
            "any host; remove the annotation",
        )
    return OptIn(polling, cooldown)


def read_cluster(cluster: Mapping[str, Any]) -> OptIn | NotOptedIn | Refusal:
    """The decision for one RayCluster (a dict as the API returns it): its annotations', or a
    :attr:`Conflict.IN_TREE_AUTOSCALER` refusal when it opts in and runs Ray's autoscaler."""
    decision = read_opt_in(cluster.get("metadata") or {})
    in_tree = (cluster.get("spec") or {}).get("enableInTreeAutoscaling")
    if isinstance(decision, OptIn) and in_tree is True:
        return Refusal(
            Conflict.IN_TREE_AUTOSCALER,
            IN_TREE_FIELD,
            "true",
            f"{IN_TREE_FIELD} is true and {OPT_IN_ANNOTATION} is enabled: set "
            f"{IN_TREE_FIELD}: false (and remove Ray's autoscaler sidecar), or remove the "
            "annotation; two autoscalers would fight over replicas and workersToDelete",
        )
    return decision


def address_problem(text: str) -> str:
    """Empty when ``text`` is ``host:port`` (a lowercase DNS name, an IPv4 address or a bracketed
    IPv6 address; a port 1..65535); else what is wrong."""
    match = _HOST_PORT.fullmatch(text)
    if match is None:
        return "expected host:port (no scheme, no path)"
    host, port = match["host"], int(match["port"])
    if not 1 <= port <= 65535:
        return f"port {port} is outside 1..65535"
    if host.startswith("["):
        return "" if _is_ip(host[1:-1], version=6) else f"{printable(host)} is not an IPv6 address"
    if _is_ip(host, version=4) or _DNS_SUBDOMAIN.fullmatch(host):
        return ""
    return f"{printable(host)} is not a lowercase DNS name or an IPv4 address"


def seconds_problem(value: int, bounds: tuple[int, int]) -> str:
    """Empty when ``value`` is within ``bounds``; else what is wrong."""
    low, high = bounds
    return "" if low <= value <= high else f"{value} is outside {low}..{high} seconds"


def _seconds(
    notes: Mapping[str, Any], annotation: str, bounds: tuple[int, int]
) -> int | Refusal | None:
    """An interval annotation: None when absent, a refusal when not whole seconds in bounds."""
    raw = notes.get(annotation)
    if raw is None:
        return None
    text = str(raw)
    if _SECONDS.fullmatch(text) is None:
        return _refuse(Invalid.NOT_AN_INTEGER, annotation, text, "expected whole seconds, e.g. 5")
    if problem := seconds_problem(int(text), bounds):
        return _refuse(Invalid.OUT_OF_BOUNDS, annotation, text, problem)
    return int(text)


def _refuse(reason: Invalid, annotation: str, value: str, problem: str) -> Refusal:
    shown = printable(value)
    return Refusal(reason, annotation, shown, f"annotation {annotation}: {shown!r}: {problem}")


def _is_ip(text: str, *, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False
