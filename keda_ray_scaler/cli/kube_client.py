"""The Kubernetes API client of a command (the agent's scale-down, the controller): a
kubeconfig, else the pod's service account; a problem is one ConfigError naming the flag."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config

from keda_ray_scaler.errors import ConfigError


def api_client(
    kubeconfig: Path | None, context: str | None, *, where: str, user_agent: str, hint: str
) -> k8s.ApiClient:
    """The client of ``kubeconfig`` (and ``context``), else of the in-cluster service account,
    named ``user_agent`` in the API server's audit log. A missing file, an unreadable or
    unknown context, or no pod to run in: ConfigError of ``where`` naming ``--kubeconfig`` (or
    ``--context``), the first line of the problem and ``hint``."""
    if kubeconfig is not None and not kubeconfig.is_file():
        raise ConfigError(where, "--kubeconfig", f"{kubeconfig} is not a file; {hint}")
    configuration = k8s.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]  # untyped
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]  # untyped
                config_file=str(kubeconfig), context=context, client_configuration=configuration
            )
    except (config.ConfigException, OSError, ValueError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if kubeconfig is None:
            problem = f"not in a Kubernetes pod ({problem.rstrip('.')})"
        flag = "--context" if context and "context" in problem.lower() else "--kubeconfig"
        raise ConfigError(where, flag, f"{problem}; {hint}") from exc
    client = k8s.ApiClient(configuration)
    client.user_agent = user_agent
    return client
