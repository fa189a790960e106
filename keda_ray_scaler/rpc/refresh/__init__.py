"""The refresh in a child process: the child that runs the target cache's refresh
(:mod:`~keda_ray_scaler.rpc.cluster_refresh`), the pipe's messages, the RPC process's mirror of
its targets, its restarts with back-off, and its metrics relayed.

May import: the rpc's target cache and its parts (``targets``, ``entry``, ``target_settings``,
``cluster_refresh``), ``sources``, ``telemetry``, ``config``; only ``rpc.server`` (the
composition) imports it.
"""
