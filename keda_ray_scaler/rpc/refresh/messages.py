"""The refresher protocol: what the RPC process and its refresher child say over their pipe.

Why typed messages: both sides used to unpack string tuples by position, so a field added on
one side shifted every field after it on the other without a word. Each kind is a frozen
dataclass here, pickled whole by :mod:`multiprocessing`, and each receiving side dispatches
with one ``match`` over the union of what it can receive.

Clusters travel as :class:`~keda_ray_scaler.identity.ClusterRef` (namespace and name); errors
as a ``kind`` (``not_found``, a :class:`~keda_ray_scaler.errors.Refusal` value, or
``unavailable``) and a message, so the parent refuses with the same type and reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from keda_ray_scaler.errors import DemandUnavailable, NotFound, Refusal, ScalerError, UntrustedData
from keda_ray_scaler.identity import ClusterRef
from keda_ray_scaler.rpc.entry import GroupTarget

# --- parent to child -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Want:
    """Register or keep ``cluster``: sent when first asked for, then every quarter of
    ``forget_after_s`` while used, so the child forgets only clusters nobody asks about."""

    cluster: ClusterRef


@dataclass(frozen=True, slots=True)
class RefreshNow:
    """Run one round now; answered by :class:`Refreshed` with the same token."""

    token: int


@dataclass(frozen=True, slots=True)
class AskMetrics:
    """Render the child's registry; answered by :class:`MetricsText` with the same token."""

    token: int


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop refreshing and exit."""


ToChild = Want | RefreshNow | AskMetrics | Stop

# --- child to parent -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Targets:
    """A finished refresh of ``cluster``: its worker groups' targets and the snapshot's age."""

    cluster: ClusterRef
    version: int
    targets: Mapping[str, GroupTarget]
    snapshot_time_s: float
    success: bool


@dataclass(frozen=True, slots=True)
class Failed:
    """A failed refresh of ``cluster``: ``kind`` from :func:`error_to_wire`, and the text."""

    cluster: ClusterRef
    version: int
    kind: str
    text: str

    @property
    def error(self) -> ScalerError:
        """The parent's error for this news."""
        return error_from_wire(self.kind, self.text)


@dataclass(frozen=True, slots=True)
class Forgot:
    """The child no longer refreshes ``cluster`` (nobody asked about it for a while)."""

    cluster: ClusterRef


News = Targets | Failed | Forgot


@dataclass(frozen=True, slots=True)
class Batch:
    """News of several clusters at once: one wake-up of the RPC process per batch."""

    news: tuple[News, ...]


@dataclass(frozen=True, slots=True)
class Refreshed:
    """The round asked for by :class:`RefreshNow` is done; its news were sent before."""

    token: int


@dataclass(frozen=True, slots=True)
class MetricsText:
    """The child's registry in text format, for the :class:`AskMetrics` with ``token``."""

    token: int
    exposition: str


ToParent = Batch | Refreshed | MetricsText | News


def error_to_wire(error: ScalerError | None) -> str:
    """The ``kind`` of a :class:`Failed` news: ``not_found``, a refusal reason, or
    ``unavailable``."""
    if isinstance(error, NotFound):
        return "not_found"
    if isinstance(error, UntrustedData):
        return error.reason.value
    return "unavailable"


def error_from_wire(kind: str, text: str) -> ScalerError:
    """The parent's error for a :class:`Failed` news (the inverse of :func:`error_to_wire`)."""
    if kind == "not_found":
        return NotFound(text)
    reasons = {r.value: r for r in Refusal}
    if kind in reasons:
        return UntrustedData(reasons[kind], text)
    return DemandUnavailable(text)
