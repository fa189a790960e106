"""Suite-wide isolation: tests never read the developer's home directory.

Ray 2.60 turns token authentication on when ``~/.ray/auth_token`` exists, and the kubernetes
client reads ``~/.kube/config``: a test run must not depend on what the machine's home holds, so
HOME points at a fresh directory and Ray's auth variables are cleared before anything imports Ray.
Tests that want auth on set it explicitly for the processes they start.
"""

from __future__ import annotations

import os
import tempfile

_HOME = tempfile.mkdtemp(prefix="krs-home-")
os.environ["HOME"] = _HOME
for _var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS", "KUBECONFIG"):
    os.environ.pop(_var, None)
