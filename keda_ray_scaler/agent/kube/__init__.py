"""The Kubernetes adapter: its settings and client, retries, list-and-watch, the pod cache and
the pod calls (fresh reads, annotation patches, deletes).

May import: the ``kubernetes`` client, the agent's ``pod``, ``interfaces`` and ``metric_names``;
never ``ray``, ``victims``, ``kuberay`` or ``joining``.
"""
