"""The agent's HTTP port: ``/metrics`` (the snapshot as series, plus the agent's own) and
``/healthz`` (the age of the last successful poll).

May import: ``schema``, ``telemetry``, the agent's ``interfaces`` and ``metric_names``, and
``ray``'s resource-name bound; never ``kube``, ``victims``, ``kuberay`` or ``joining``.
"""
