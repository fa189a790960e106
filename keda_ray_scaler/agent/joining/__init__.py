"""Pods against Ray nodes: which worker pods are coming, joined, or will never join; the group
back-off; the planner's view of a group's pods.

May import: the agent's ``ray`` (its pure readings), ``interfaces``, ``pod``, ``metric_names``;
never ``kube``, ``victims`` or ``kuberay``.
"""
