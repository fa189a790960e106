"""``keda-ray-scaler plan``: plan from a cluster spec file and a snapshot file, print the plan."""

from __future__ import annotations

import argparse
import json
from typing import Any

from keda_ray_scaler.cli import add_command
from keda_ray_scaler.config import load_cluster_spec, load_snapshot
from keda_ray_scaler.decisions import Decision, DecisionKind, Placed, Plan, Unplaceable, Why
from keda_ray_scaler.labels import Selectors, selectors_text
from keda_ray_scaler.model import Resources
from keda_ray_scaler.planner import plan

#: What ``plan --help`` says the command does.
_DESCRIPTION = (
    "Print, per worker group, the target replicas, the pods kept busy, the pods to add "
    "and the removable pods in order, then where demand with label selectors went and by "
    "which selector, then the demand that cannot be placed, with a reason. Bad input exits "
    "with code 2 and one line naming the file and field."
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``plan`` and its flags."""
    p = add_command(subparsers, "plan", _DESCRIPTION)
    p.add_argument("--cluster", required=True, help="cluster spec file (YAML or JSON)")
    p.add_argument(
        "--snapshot", required=True, help="snapshot file: demand and pods (YAML or JSON)"
    )
    p.add_argument(
        "--format", choices=("table", "json"), default="table", help="output format (default table)"
    )


def run(args: argparse.Namespace) -> int:
    """Load both files, plan, print; ``ConfigError`` is turned into exit code 2 by the caller."""
    cluster = load_cluster_spec(args.cluster)
    inp = load_snapshot(args.snapshot, cluster)
    result = plan(inp)
    if args.format == "json":
        print(json.dumps(plan_to_json(result), sort_keys=True, indent=2))
    else:
        print(plan_to_table(result))
    return 0


def _resources(r: Resources) -> dict[str, float | int]:
    return r.to_float_dict()


def plan_to_json(p: Plan) -> dict[str, Any]:
    """The plan as plain JSON values (the ``--format json`` document)."""
    return {
        "groups": {
            name: {
                "target": g.target,
                "desired": g.desired,
                "floor": g.floor,
                "current": g.current,
                "busy": g.busy,
                "new": g.new,
                "removable": list(g.removable),
                "over_cap": list(g.over_cap),
                "decisions": [decision_to_json(d) for d in g.decisions],
            }
            for name, g in p.groups.items()
        },
        "decisions": [decision_to_json(d) for d in p.decisions],
        "placed": [placed_to_json(x) for x in p.placed],
        "unplaceable": [
            {
                "resources": _resources(u.resources),
                "count": u.count,
                "reason": u.reason.value,
                "detail": u.detail,
                "kind": u.kind.value,
                "strategy": u.strategy.value if u.strategy else None,
                "selectors": _selectors(u.selectors),
            }
            for u in p.unplaceable
        ],
    }


def _selectors(sels: Selectors) -> list[str]:
    return [str(s) for s in sels]


def placed_to_json(x: Placed) -> dict[str, Any]:
    """Where demand with label selectors went, as plain JSON values."""
    return {
        "group": x.group,
        "count": x.count,
        "selectors": _selectors(x.selectors),
        "by": str(x.by),
        "shapes": [_resources(r) for r in x.shapes],
        "existing": x.existing,
    }


def plan_to_table(p: Plan) -> str:
    """The plan as an aligned text table, reasons and unplaceable demand below it."""
    header: tuple[str, ...] = (
        "GROUP",
        "TARGET",
        "DESIRED",
        "FLOOR",
        "CURRENT",
        "BUSY",
        "NEW",
        "REMOVABLE",
    )
    rows = [header]
    for name, g in p.groups.items():
        removable = ",".join(g.removable) or "-"
        rows.append(
            (
                name,
                *(str(v) for v in (g.target, g.desired, g.floor, g.current, g.busy, g.new)),
                removable,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for r in rows:
        cells = [
            r[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(r[1:-1], widths[1:-1], strict=True)),
            r[-1],
        ]
        lines.append("  ".join(cells))
    for name, g in p.groups.items():
        lines.extend(f"  {name}: {describe(d)}" for d in g.decisions)
    lines.extend(f"  cluster: {describe(d)}" for d in p.decisions)
    if p.placed:
        lines.append("placed by label selector:")
        lines.extend(f"  {describe_placed(x)}" for x in p.placed)
    if p.unplaceable:
        lines.append("unplaceable:")
        lines.extend(f"  {describe_unplaceable(u)}" for u in p.unplaceable)
    else:
        lines.append("unplaceable: none")
    return "\n".join(lines)


def describe_placed(x: Placed) -> str:
    """``{CPU: 2} x3 [market-type=spot;*] -> on-demand by fallback * (existing pods)``: the
    shapes, the bundles, the demand's selectors, the group, the fallback that admitted it
    when not the first, and whether the pods exist."""
    shapes = "|".join(map(str, x.shapes)) or "{}"
    line = f"{shapes} x{x.count} [{selectors_text(x.selectors)}] -> {x.group}"
    if x.selectors and x.by != x.selectors[0]:
        line += f" by fallback {x.by}"
    return line + (" (existing pods)" if x.existing else "")


def describe_unplaceable(u: Unplaceable) -> str:
    """``2 x {CPU: 2} [task] [market-type=gpu-spot]: reason (detail)``; the selectors only
    when the demand has some."""
    what = u.kind.value + (f" {u.strategy.value}" if u.strategy else "")
    sels = f" [{selectors_text(u.selectors)}]" if u.selectors else ""
    detail = f" ({u.detail})" if u.detail else ""
    return f"{u.count} x {u.resources} [{what}]{sels}: {u.reason.value}{detail}"


def decision_to_json(d: Decision) -> dict[str, Any]:
    """One typed decision as plain JSON values."""
    return {
        "kind": d.kind.value,
        "count": d.count,
        "reason": d.reason.value,
        "pods": list(d.pods),
        "limit": d.limit,
    }


_WHY = {
    Why.MIN_REPLICAS: "minReplicas {limit}",
    Why.CONSTRAINTS: "request_resources",
    Why.PLACEMENT_GROUPS: "placement groups",
    Why.TASKS: "tasks",
    Why.DEMAND: "placement groups and tasks",
    Why.IDLE_TIMEOUT: "idle past idleTimeoutSeconds",
    Why.MAX_REPLICAS: "above maxReplicas {limit}",
    Why.MAX_WORKERS: "above maxWorkers {limit}",
    Why.BUSY_ABOVE_CAP: "busy above a cap of {limit}, kept",
    Why.NEW_PODS: "the group gets new pods",
    Why.NOT_VICTIMS: "{limit} pods are not victims",
    Why.UNKNOWN_GROUP: "unknown worker group",
    Why.NOT_JOINED: "not a Ray node within the join timeout",
    Why.UNSCHEDULABLE: "unschedulable: no node fits",
    Why.CONTAINER_FAILING: "its container fails (image pull, crash loop, config)",
    Why.RAY_NODE_DEAD: "its Ray node is dead",
}

_KIND = {
    DecisionKind.ADD: "{count} new pod(s) for {why}",
    DecisionKind.REMOVE: "{count} pod(s) removable ({why}): {pods}",
    DecisionKind.KEEP: "{count} pod(s) kept ({why})",
    DecisionKind.HOLD: "target held {count} above desired ({why})",
    DecisionKind.IGNORE: "pod(s) {pods} ignored ({why})",
}


def describe(d: Decision) -> str:
    """One decision as a line of text (the only place decisions become text)."""
    why = _WHY[d.reason].format(limit=d.limit)
    return _KIND[d.kind].format(count=d.count, why=why, pods=",".join(d.pods))
