"""The agent beside each Ray head: reads Ray's demand and nodes from the GCS, exports them on
``/metrics``, and runs the safe scale-down, in either mode (Deployment, or KubeRay: recommended).

Rooms, each with its charter in its ``__init__`` (import-linter keeps the arrows, pyproject.toml):
``ray/`` (the GCS read into demand and nodes; drain), ``kube/`` (the Kubernetes adapter),
``joining/`` (pods against Ray nodes, back-off), ``victims/`` (safe scale-down), ``kuberay/``
(RayCluster and RayWorkerGroup: read, watched, patched; the leads), ``http/`` (``/metrics``,
``/healthz``); at the root the poll loop (``loop``), the wiring (``builder``), the settings, the
interfaces between the rooms (``interfaces``, ``pod``, ``modes``).
"""
