"""Safe scale-down: choose the victims, mark them, confirm the ranking, drain, publish, verify,
release. One worker group at a time; a busy pod is never a victim.

May import: the agent's ``interfaces``, ``pod``, ``modes``, ``metric_names``; never ``kube``
(pods come through ``interfaces.PodSource``), ``kuberay`` (they meet only in ``builder``) or
``ray`` (Ray comes through ``interfaces.RayView`` and ``interfaces.Drainer``).
"""
