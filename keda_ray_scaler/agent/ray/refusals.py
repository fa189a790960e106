"""Values read from Ray that the agent refuses: the rules, and a bounded reason for each (pure).

Ray's input is untrusted wherever it enters: any task may write the internal KV, and any
process that reaches the GCS may start a raylet under any ``RAY_CLOUD_INSTANCE_ID`` and IP. A
value that breaks a rule below never stops a poll: it is left out (a request of
``request_resources()`` as if none were set, a node as mapped to no pod), counted at each poll
that reads it (``ray_scaler_agent_ray_input_refused_total{cluster, reason}``, the reason one of
:class:`Refusal`) and logged once per distinct value
(:class:`~keda_ray_scaler.agent.ray.refusal_log.RefusalLog`). Pure, and light: the agent's
``--help`` reads the modules that import it.

The rules (pure): a pod name is a Kubernetes DNS-1123 subdomain (at most 253 characters, the
scaler's ``--max-name-chars`` default, so a name that passes never refuses the cluster there); a
node id is 1 to :data:`MAX_NODE_ID_BYTES` bytes (Ray's are 28); a node names a pod whose IPs the
agent knows only from one of them (:func:`same_ip`).
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import re
from dataclasses import dataclass
from typing import Final

#: Characters of a Kubernetes object name (DNS-1123 subdomain), as ``ValidatePodName`` allows.
MAX_POD_NAME_CHARS: Final = 253
#: Bytes of a node id the agent accepts: Ray's ``NodeID`` has 28 (56 hex characters).
MAX_NODE_ID_BYTES: Final = 64
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class Refusal(enum.StrEnum):
    """Why a value read from Ray was left out (a metric label: a fixed set)."""

    #: ``autoscaler_resource_request`` (v1's ``request_resources()``) is not JSON
    V1_REQUEST_NOT_JSON = "v1_request_not_json"
    #: it is JSON, but no list of ``{resource: non-negative finite number}`` bundles
    V1_REQUEST_NOT_BUNDLES = "v1_request_not_bundles"
    #: a node's instance id is no pod name (DNS-1123 subdomain, at most 253 characters)
    POD_NAME_INVALID = "pod_name_invalid"
    #: a node names a pod whose IP is not the node's
    NODE_IP_MISMATCH = "node_ip_mismatch"
    #: a node id empty or longer than MAX_NODE_ID_BYTES: the node is left out
    NODE_ID_INVALID = "node_id_invalid"
    #: two live nodes name one pod: the pod is never a victim while they do
    TWO_LIVE_NODES = "two_live_nodes"
    #: a pod's one live node was superseded (a newer node of it came, and died): the pod is
    #: never a victim while Ray lists that node alive
    SUPERSEDED_NODE_ALIVE = "superseded_node_alive"
    #: the head's Ray version is outside the supported range: nothing read from it
    UNSUPPORTED_VERSION = "unsupported_ray_version"
    #: the head's ``CLUSTER_METADATA`` is no JSON object with a ``ray_version``: as unsupported
    MALFORMED_METADATA = "malformed_cluster_metadata"
    #: a demand's label selectors break Ray's syntax or the bounds (``agent/ray/label_read.py``):
    #: the demand is left out
    LABEL_SELECTOR_INVALID = "label_selector_invalid"
    #: a node's label breaks Ray's syntax, or is beyond the most labels a node may export: that
    #: label is left out of the node's
    NODE_LABEL_INVALID = "node_label_invalid"


@dataclass(frozen=True, slots=True)
class Refused:
    """One value left out: why, the value as read, and a line for a person."""

    reason: Refusal
    value: str
    detail: str = ""


def is_pod_name(name: str) -> bool:
    """Whether ``name`` may name a pod: a DNS-1123 subdomain of at most 253 characters."""
    return len(name) <= MAX_POD_NAME_CHARS and _SUBDOMAIN.fullmatch(name) is not None


def node_id_ok(node_id: bytes) -> bool:
    """Whether ``node_id`` is a node id the export may carry (1 to MAX_NODE_ID_BYTES bytes)."""
    return 0 < len(node_id) <= MAX_NODE_ID_BYTES


@functools.lru_cache(maxsize=4096)  # pure; the same few addresses recur at every poll
def ip_key(address: str) -> str:
    """``address`` in one spelling (``fd00:0::1`` as ``fd00::1``); what is no address, as it is."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def same_ip(a: str, b: str) -> bool:
    """Whether two addresses are one (``fd00::1`` is ``fd00:0::1``); an empty one is none."""
    return bool(a) and bool(b) and ip_key(a) == ip_key(b)
