"""``keda-ray-scaler controller``: make and keep each opted-in RayCluster's objects.

Builds the controller from its flags (:mod:`keda_ray_scaler.cli.controller_flags`): the
Kubernetes client (a kubeconfig, else the pod's service account), /metrics (prometheus_client's
HTTP server on ``--host``), the reconciler and its loop
(:mod:`keda_ray_scaler.controller.runner`), and runs it until SIGTERM or SIGINT. Bad flags, an
unreadable kubeconfig or a port in use exit 2 with one line naming the flag.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import ssl
import threading
from pathlib import Path

import structlog
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry, start_http_server

from keda_ray_scaler.cli import configure_logging_from
from keda_ray_scaler.cli.controller_flags import WHERE, controller_settings, webhook_inputs
from keda_ray_scaler.cli.kube_client import api_client
from keda_ray_scaler.clock import SystemClock
from keda_ray_scaler.controller.runner import Runner, build_runner
from keda_ray_scaler.controller.template import ControllerTemplate
from keda_ray_scaler.controller.webhook_server import CertFiles, WebhookServer
from keda_ray_scaler.errors import ConfigError

log = structlog.get_logger(__name__)

#: the controller's User-Agent in the API server's audit log
USER_AGENT = "keda-ray-scaler-controller"


def kube_client(kubeconfig: Path | None, context: str | None) -> k8s.ApiClient:
    """The API client: ``kubeconfig`` (and ``context``), else the pod's service account;
    ConfigError naming the flag."""
    return api_client(
        kubeconfig, context, where=WHERE, user_agent=USER_AGENT, hint="give --kubeconfig"
    )


def run(args: argparse.Namespace) -> int:
    """Build the controller from flags, then run it until SIGTERM/SIGINT; 0."""
    configure_logging_from(args, WHERE)
    settings = controller_settings(args)
    api_client = kube_client(args.kubeconfig, args.context)
    registry = CollectorRegistry()
    if args.metrics_port >= 0:
        try:
            start_http_server(args.metrics_port, addr=args.host, registry=registry)
        except OSError as exc:
            where = f"{args.host}:{args.metrics_port}"
            raise ConfigError(WHERE, "--metrics-port", f"{where}: {exc.strerror or exc}") from exc
    webhook = start_webhook(args, settings.template, registry)
    runner = build_runner(api_client, settings, registry, now=SystemClock().now)
    log.info("controller started", namespaces=list(settings.namespaces), resync_s=settings.resync_s)
    try:
        asyncio.run(_main(runner))
    finally:
        if webhook is not None:
            webhook.shutdown()
            webhook.server_close()
    log.info("controller stopped")
    return 0


def start_webhook(
    args: argparse.Namespace, template: ControllerTemplate, registry: CollectorRegistry
) -> WebhookServer | None:
    """The agent-sidecar webhook serving in a thread (None without --webhook-port); ConfigError
    naming the flag for a port in use or a certificate that does not load."""
    inputs = webhook_inputs(args)
    if inputs is None:
        return None
    cert, key, fragment = inputs
    try:
        certs = CertFiles(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(WHERE, "--webhook-cert", f"{cert}, {key}: {exc}") from None
    address = (args.webhook_host, args.webhook_port)
    try:
        server = WebhookServer(address, certs, fragment, template, registry)
    except OSError as exc:
        where = f"{args.webhook_host}:{args.webhook_port}"
        raise ConfigError(WHERE, "--webhook-port", f"{where}: {exc.strerror or exc}") from None
    threading.Thread(target=server.serve_forever, name="webhook", daemon=True).start()
    log.info("webhook serving", port=server.server_address[1])
    return server


async def _main(runner: Runner) -> None:
    """Run ``runner`` until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    running = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        running.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(runner.run())
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
