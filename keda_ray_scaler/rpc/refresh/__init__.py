"""The scaler's background refresh: fetch each Ray cluster's series, plan, apply the safety rules,
store; run in a child process whose targets the RPC process mirrors over a pipe.

May import: ``sources``, ``planner``, ``config``, ``telemetry`` and the rpc's target cache
(``rpc.targets``, ``rpc.entry``, ``rpc.safety``, ``rpc.target_settings``); the request path
(``servicer``, ``scoping``, ``is_active_stream``) never imports it.
"""
