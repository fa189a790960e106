"""The names of the agent's own metrics, one constant each; the agent's rooms import them here.

The series the scaler reads (demand, worker groups, nodes, victims, ``demand_shapes_merged``,
``nodes_unmapped``, ``wrong_victims``, ``scale_down_frozen``) are the contract between the two
and are named in :mod:`keda_ray_scaler.schema`. The names below are the agent's own: its health,
its Kubernetes calls and its decisions. Each constant is the name as exposed (a counter's with
``_total``, as tests read it; prometheus_client adds the suffix, so a counter is declared with
``.removesuffix("_total")`` or the name as is). The label names and the help text are declared
where the metric is made; docs/reference/metrics.md documents them all (tests/project checks it).
At the bottom of the agent's rooms: imports nothing.
"""

from __future__ import annotations

from typing import Final

# --- the poll (agent/http/exporter.py) -------------------------------------------------------
#: counter {cluster}: polls of Ray that failed
POLL_ERRORS: Final = "ray_scaler_agent_poll_errors_total"
#: histogram {cluster}: seconds one poll took (Ray read, mapping, encoding)
POLL_DURATION: Final = "ray_scaler_agent_poll_duration_seconds"
#: counter {cluster}: polls ended by an unexpected exception (a bug; also in poll_errors)
POLL_CRASHES: Final = "ray_scaler_agent_poll_crashes_total"
#: counter {cluster, reason}: polls whose task demand fell back from rule R1 to the GCS's sum
DEMAND_FALLBACKS: Final = "ray_scaler_agent_demand_fallbacks_total"
#: gauge {cluster}: Ray nodes alive for a pod that has a newer node (a restarted raylet's)
SUPERSEDED_RAY_NODES: Final = "ray_scaler_agent_superseded_ray_nodes"
#: gauge {cluster}: pending task bundles left out of the last export (counted twice by Ray)
DOUBLE_COUNTED_BUNDLES: Final = "ray_scaler_agent_double_counted_bundles"

# --- Ray's resource names (agent/ray/resource_names.py) --------------------------------------
#: counter {cluster}: distinct resource names exported as a stand-in
NAMES_STOOD_IN: Final = "ray_scaler_agent_resource_names_stood_in_total"
#: counter {cluster, reason}: values read from Ray left out as untrusted (agent/ray/refusals.py)
RAY_INPUT_REFUSED: Final = "ray_scaler_agent_ray_input_refused_total"

# --- pods joining Ray (agent/joining/join_tracker.py) ----------------------------------------
#: counter {cluster, group, reason}: worker pods found failing to become (or stay) Ray nodes
JOIN_FAILURES: Final = "ray_scaler_agent_join_failures_total"
#: gauge {cluster, group}: seconds left of the group's launch back-off (0: none)
BACKOFF_SECONDS: Final = "ray_scaler_agent_backoff_seconds"

# --- the victim protocol (agent/victims/controller.py) ---------------------------------------
#: counter {cluster, group, outcome}: victim protocol decisions
VICTIM_VERDICTS: Final = "ray_scaler_victim_verdicts_total"

# --- Kubernetes (agent/kube/) ----------------------------------------------------------------
#: counter {cluster, operation, code}: failed Kubernetes API calls, each attempt (kube_retry.py)
KUBE_API_ERRORS: Final = "ray_scaler_kube_api_errors_total"
#: counter {cluster}: pod cache relists after the watch expired (410 Gone) or failed
KUBE_RELISTS: Final = "ray_scaler_kube_relists_total"
#: gauge {cluster}: 1 when the pod cache is synced
KUBE_CACHE_SYNCED: Final = "ray_scaler_kube_cache_synced"
#: counter {cluster, reason}: pods matching the worker selector that the cluster's workload does
#: not control, left out, each once (pod_owner.py)
KUBE_PODS_REFUSED: Final = "ray_scaler_kube_pods_refused_total"

# --- KubeRay mode (agent/kuberay/) -----------------------------------------------------------
#: counter {cluster}: times the RayCluster's worker groups changed while the agent ran
SPEC_CHANGES: Final = "ray_scaler_agent_spec_changes_total"
#: gauge {cluster}: 1 while the worker groups are fresh (the RayCluster watched and valid)
SPEC_FRESH: Final = "ray_scaler_agent_spec_fresh"
#: counter {cluster, group, action}: KubeRay scale decisions applied or waited on
KUBERAY_DECISIONS: Final = "ray_scaler_kuberay_decisions_total"
#: counter {cluster}: RayCluster patches refused by a precondition (then re-decided)
KUBERAY_CONFLICTS: Final = "ray_scaler_kuberay_conflicts_total"
#: counter {cluster, group}: scale-ups carried ahead of the HPA by the agent's own plan
KUBERAY_LEADS: Final = "ray_scaler_kuberay_scale_up_leads_total"
#: counter {cluster, group}: drained victims deleted ahead of the HPA by the agent's own plan
KUBERAY_DOWN_LEADS: Final = "ray_scaler_kuberay_scale_down_leads_total"
#: counter {cluster, reason}: ScaledObjects refused at the read, each version once (kuberay_api.py)
SCALED_OBJECTS_REFUSED: Final = "ray_scaler_kuberay_scaled_objects_refused_total"
