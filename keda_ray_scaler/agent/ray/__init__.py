"""Ray's side: the GCS read into pending demand and worker nodes, bounded for export; drain.

May import: ``gcs``, ``schema``, ``model``, ``telemetry``, and the agent's ``interfaces`` and
``metric_names``; never ``kube``, ``victims``, ``kuberay`` or ``joining``.
"""
