"""Label selectors and node labels as the GCS gives them, checked at the door (pure).

Where Ray (2.49+, label scheduling) puts them:

- ``ResourceRequest.label_selectors`` (``autoscaler.proto`` field 3): a task's or actor's
  (``label_selector``, then each ``fallback_strategy`` option), a placement-group bundle's
  (``bundle_label_selector``: ``GangResourceRequest.bundle_selectors[0].resource_requests``
  when given, else ``requests``, as Ray's v2 scheduler reads them), a ``request_resources``
  bundle's (``bundle_label_selectors``);
- ``ResourceDemand.label_selectors`` (``gcs.proto`` field 5): the same, in each raylet's queue
  (rule R1's read, :mod:`~keda_ray_scaler.agent.ray.task_load`);
- ``NodeState.labels`` (field 13) with ``dynamic_labels`` (field 6) over them, as Ray's v2 reads
  a node's labels.

Heads older than label scheduling send none of them (Ray 2.10's ``autoscaler.proto`` has none
of these fields): every demand then has no selector, nodes no labels, and plans are as before.

Anyone who can submit a task or start a raylet writes these, so each is checked against Ray's
syntax and the bounds of :mod:`~keda_ray_scaler.labels` (and an operator must be ``in`` or
``!in``, the proto's two). Demand whose selectors break a rule is left out (no node can be
asked for it); a node's label that breaks one is left out of its labels, and labels beyond
:data:`~keda_ray_scaler.labels.MAX_LABELS` (in key order) too. Each is refused and counted
(:class:`~keda_ray_scaler.agent.ray.refusals.Refusal`), never a failed poll.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Final

from keda_ray_scaler.agent.ray.refusals import Refusal, Refused
from keda_ray_scaler.gcs._generated import common_pb2
from keda_ray_scaler.labels import (
    MAX_LABELS,
    LabelConstraint,
    LabelError,
    LabelOperator,
    Labels,
    LabelSelector,
    Selectors,
    key_problem,
    selectors_of,
    value_problem,
)

#: A selector list as plain values, as read: per selector, its constraints as
#: ``(key, operator number, values)``. Hashable, so queued shapes can be summed by it.
RawSelectors = tuple[tuple[tuple[str, int, tuple[str, ...]], ...], ...]

_OPERATORS: Final[dict[int, LabelOperator]] = {
    int(common_pb2.LABEL_OPERATOR_IN): LabelOperator.IN,
    int(common_pb2.LABEL_OPERATOR_NOT_IN): LabelOperator.NOT_IN,
}


def raw_selectors(messages: Iterable[common_pb2.LabelSelector]) -> RawSelectors:
    """``repeated LabelSelector`` as plain values (nothing checked yet)."""
    return tuple(
        tuple((c.label_key, int(c.operator), tuple(c.label_values)) for c in sel.label_constraints)
        for sel in messages
    )


def selectors(raw: RawSelectors) -> Selectors:
    """The canonical selectors of ``raw``; LabelError when one breaks a rule."""
    if not raw:
        return ()
    out = []
    for sel in raw:
        constraints = []
        for key, op, values in sel:
            operator = _OPERATORS.get(op)
            if operator is None:
                raise LabelError(f"label selector operator {op} on {key[:80]!r} is not in, !in")
            constraints.append(LabelConstraint.of(key, operator, values))
        out.append(LabelSelector.of(constraints))
    return selectors_of(out)


def checked_selectors(raw: RawSelectors, what: str) -> tuple[Selectors | None, Refused | None]:
    """The selectors of ``raw``, or None and the refusal (``what`` names the demand)."""
    try:
        return selectors(raw), None
    except LabelError as exc:
        return None, Refused(Refusal.LABEL_SELECTOR_INVALID, repr(raw)[:512], f"{what}: {exc}")


@functools.lru_cache(maxsize=4096)  # pure; the same keys and values recur on every node
def _pair_problem(key: str, value: str) -> str | None:
    return key_problem(key) or value_problem(value)


#: the prefix of Ray's dynamic placement-group node labels
RAY_PG_LABEL = "_PG_"


def node_labels(
    labels: Mapping[str, str], dynamic: Mapping[str, str], node: str
) -> tuple[Labels, list[Refused]]:
    """A node's labels (``dynamic`` over ``labels``), the ones breaking a rule left out. Ray's
    own placement-group labels (``_PG_<group id>``, empty value: Ray sets one on every node
    holding a bundle; no selector names them, and they are no Kubernetes key) are left out
    without a refusal (seen on the real node: 164 refusals in one run)."""
    merged = {k: v for k, v in {**labels, **dynamic}.items() if not k.startswith(RAY_PG_LABEL)}
    if not merged:
        return Labels(), []
    kept: dict[str, str] = {}
    refused: list[Refused] = []
    for key, value in sorted(merged.items()):
        problem = _pair_problem(key, value)
        if problem is None and len(kept) >= MAX_LABELS:
            problem = f"more than {MAX_LABELS} labels"
        if problem is None:
            kept[key] = value
        else:
            pair = f"{key[:200]}={value[:200]}"
            refused.append(Refused(Refusal.NODE_LABEL_INVALID, pair, f"node {node}: {problem}"))
    return Labels(kept), refused
