"""The objects one opted-in RayCluster should have: ``desired_objects(cluster, opt_in, template)``.

Per worker group of ``spec.workerGroupSpecs`` one RayWorkerGroup and one ScaledObject whose
bounds are the group's ``minReplicas`` (absent: 0) and ``maxReplicas`` (absent: KubeRay's
default, 2^31-1), in replicas as the agent reads them; then the agent's ServiceAccount, Role
(this cluster and these RayWorkerGroups by name) and RoleBinding. A group the scaler could not
serve is refused, typed, and the others go on: a name that is not a DNS-1123 label (the trigger
metadata requires one), a repeated name, or bounds that are not whole numbers with
``0 <= minReplicas <= maxReplicas``. A group refused for its bounds is *held*: the objects it
has keep as they are (:func:`~keda_ray_scaler.controller.changes.plan_changes` neither updates
nor deletes them) and its RayWorkerGroup stays in the Role, so a typo in a bound removes no
autoscaling mid-run. Pure: no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keda_ray_scaler.controller import objects
from keda_ray_scaler.controller.objects import Manifest, Owner
from keda_ray_scaler.controller.optin import OptIn, printable
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label
from keda_ray_scaler.model import INT32_MAX


class GroupProblem(enum.Enum):
    """Why a worker group gets no objects."""

    #: ``groupName`` is not a DNS-1123 label
    BAD_NAME = "bad_name"
    #: a second group of the same name
    DUPLICATE = "duplicate"
    #: min/max not whole numbers with 0 <= minReplicas <= maxReplicas (the group is held)
    BAD_BOUNDS = "bad_bounds"


@dataclass(frozen=True, slots=True)
class GroupRefused:
    """A worker group refused: its name (escaped), why, and what to change."""

    group: str
    problem: GroupProblem
    message: str


@dataclass(frozen=True, slots=True)
class DesiredObjects:
    """What one RayCluster should have: the manifests in the order to create them (identity,
    then per group the RayWorkerGroup before its ScaledObject) and the groups refused. No
    manifests: everything the controller made for the cluster goes."""

    owner: Owner
    manifests: tuple[Manifest, ...] = ()
    refused: tuple[GroupRefused, ...] = ()

    @property
    def held_groups(self) -> frozenset[str]:
        """Groups whose objects keep as they are (refused for their bounds only)."""
        return frozenset(r.group for r in self.refused if r.problem is GroupProblem.BAD_BOUNDS)


def owner_of(cluster: Mapping[str, Any]) -> Owner:
    """The RayCluster's namespace, name and uid; ConfigError naming the field when one is
    missing or the name is not a DNS-1123 label."""
    meta = cluster.get("metadata") or {}
    fields: list[str] = []
    for key in ("namespace", "name", "uid"):
        value = meta.get(key)
        if not isinstance(value, str) or not value:
            raise ConfigError("RayCluster", f"metadata.{key}", "required")
        fields.append(value)
    namespace, name, uid = fields
    if not is_dns_label(name):
        raise ConfigError(f"RayCluster {namespace}", "metadata.name", "not a DNS-1123 label")
    return Owner(namespace, name, uid)


def nothing_desired(cluster: Mapping[str, Any]) -> DesiredObjects:
    """What a cluster that is not (or no longer) served should have: nothing of ours."""
    return DesiredObjects(owner_of(cluster))


def desired_objects(
    cluster: Mapping[str, Any], opt_in: OptIn, template: ControllerTemplate
) -> DesiredObjects:
    """The objects of one opted-in RayCluster (a dict as the API returns it), its overrides
    applied to ``template`` (module doc: bounds, refusals, held groups)."""
    owner = owner_of(cluster)
    settings = template.with_overrides(opt_in)
    per_group: list[Manifest] = []
    role_names: list[str] = []
    refused: list[GroupRefused] = []
    seen: set[str] = set()
    for i, group in enumerate((cluster.get("spec") or {}).get("workerGroupSpecs") or ()):
        read = _read_group(group, i, seen)
        if isinstance(read, GroupRefused):
            refused.append(read)
            if read.problem is GroupProblem.BAD_BOUNDS:
                role_names.append(objects.group_object_name(owner.name, read.group))
            continue
        name, bounds = read
        per_group += [
            objects.worker_group(owner, name),
            objects.scaled_object(owner, name, bounds, settings),
        ]
        role_names.append(objects.group_object_name(owner.name, name))
    identity = objects.agent_identity(owner, settings, role_names)
    return DesiredObjects(owner, (*identity, *per_group), tuple(refused))


def _read_group(
    group: object, index: int, seen: set[str]
) -> tuple[str, tuple[int, int]] | GroupRefused:
    """One ``workerGroupSpecs`` entry: its name and (min, max), or why it is refused; adds the
    name to ``seen``."""
    field = f"spec.workerGroupSpecs[{index}]"
    entry: Mapping[str, Any] = group if isinstance(group, Mapping) else {}
    raw = entry.get("groupName")
    name = raw if isinstance(raw, str) else ""
    if not is_dns_label(name):
        return GroupRefused(
            printable(str(raw)),
            GroupProblem.BAD_NAME,
            f"{field}.groupName {printable(str(raw))!r} is not a DNS-1123 label "
            "(lowercase letters, digits and '-', at most 63): the scaler cannot name it",
        )
    if name in seen:
        return GroupRefused(name, GroupProblem.DUPLICATE, f"{field}: a second group {name!r}")
    seen.add(name)
    low, high = entry.get("minReplicas", 0), entry.get("maxReplicas", INT32_MAX)
    if not (_whole(low) and _whole(high) and 0 <= low <= high <= INT32_MAX):
        return GroupRefused(
            name,
            GroupProblem.BAD_BOUNDS,
            f"{field}: minReplicas {printable(str(low))} and maxReplicas "
            f"{printable(str(high))} must be whole numbers with 0 <= minReplicas <= maxReplicas "
            "(its objects are kept as they are until then)",
        )
    return name, (low, high)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
