"""KubeRay mode: the RayCluster and its RayWorkerGroups read, watched and patched; the
ScaledObject's view; the scale-up and scale-down leads; which RayWorkerGroup holds each group;
the RayWorkerGroup status.

May import: the agent's ``kube`` (retries, list-and-watch, pod store), ``joining``,
``interfaces``, ``pod``, ``modes``, ``metric_names``; never ``victims`` (they meet only in
``builder``) or ``ray``.
"""
