"""The Ray versions the agent supports, and the version a head reports.

Every head writes ``{"ray_version": "2.47.1", "python_version": ..., ...}`` as JSON under the
internal KV key ``CLUSTER_METADATA`` in namespace ``cluster`` when it starts (Ray's
``usage_lib.put_cluster_metadata``, always, usage stats or not: Ray's own clients check their
version against it), on every version from 2.10 to 2.60 (``tests/real/ray/test_ray_versions.py``
reads it from each). The agent reads it before its first poll and refuses a version outside
:data:`SUPPORTED` instead of reading a protocol it was never tested against: the range is the one
the version matrix runs (``make test-ray-versions``, ``docs/reference/ray-versions.md``). Any
Ray task may overwrite the key: a value that names no version is refused as an unsupported one
is (:class:`MalformedClusterMetadata`), never a plain failure.
"""

from __future__ import annotations

import json
import re
from typing import Final

from keda_ray_scaler.errors import RayError

#: ``(major, minor)`` of the oldest and the newest supported Ray, both included (any patch).
SUPPORTED: Final = ((2, 10), (2, 60))
#: The range, as messages and the docs say it.
SUPPORTED_TEXT: Final = "2.10.0 to 2.60.x"
#: Ray's internal KV key and namespace of the head's cluster metadata.
CLUSTER_METADATA_KEY: Final = b"CLUSTER_METADATA"
CLUSTER_NAMESPACE: Final = b"cluster"

#: Characters of a ``ray_version`` the agent reads (``"2.10.0rc1"`` has 9); a longer one names
#: no version, and is never carried whole into a message.
MAX_VERSION_CHARS: Final = 64
#: Characters of a malformed value kept in its refusal (the value may be megabytes).
MALFORMED_KEPT_CHARS: Final = 200

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(.*)")


class UnsupportedRayVersion(RayError):
    """The head runs a Ray version the agent does not support (a poll reads nothing)."""

    def __init__(self, version: str, problem: str) -> None:
        self.version = version
        super().__init__(problem)


def unsupported(version: str) -> str | None:
    """Why Ray ``version`` is not supported (one line), or None when it is (pure).

    Any patch or pre-release of a supported minor is supported (``2.10.0rc1``, ``2.60.3``); a
    development build (``3.0.0.dev0``, Ray's nightly) or a string that is no version is not.
    """
    found = _VERSION.fullmatch(version.strip())
    if found is None or "dev" in found.group(4):
        return f"Ray {version!r} is not a released Ray version; supported: {SUPPORTED_TEXT}"
    minor = (int(found.group(1)), int(found.group(2)))
    low, high = SUPPORTED
    if minor < low:
        return f"Ray {version} is older than the oldest supported, {SUPPORTED_TEXT}"
    if minor > high:
        return f"Ray {version} is newer than the newest supported, {SUPPORTED_TEXT}"
    return None


class MalformedClusterMetadata(UnsupportedRayVersion):
    """The head's cluster metadata names no version (not JSON, or no ``ray_version`` string of
    at most :data:`MAX_VERSION_CHARS`): refused as an unsupported version is; ``version`` holds
    the value's first :data:`MALFORMED_KEPT_CHARS` characters."""


def parse_cluster_metadata(raw: bytes) -> str:
    """The ``ray_version`` of the head's cluster metadata; :class:`MalformedClusterMetadata`
    if it has none."""
    key = CLUSTER_METADATA_KEY.decode()
    kept = raw[:MALFORMED_KEPT_CHARS].decode(errors="replace")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: "[" nested 100,000 deep
        raise MalformedClusterMetadata(kept, f"{key}: not JSON: {str(exc)[:120]}") from exc
    version = data.get("ray_version") if isinstance(data, dict) else None
    if not isinstance(version, str) or not version or len(version) > MAX_VERSION_CHARS:
        raise MalformedClusterMetadata(kept, f"{key}: no ray_version in {raw[:200]!r}")
    return version
