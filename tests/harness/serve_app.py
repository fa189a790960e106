"""The RayService test's Serve application: ``serve_app:app`` (the share is on ``PYTHONPATH``).

One deployment whose replicas each hold ``{CPU: 5}`` (two per 10-CPU pod): Serve's own replica
autoscaling on ongoing requests is Ray demand, which the agent exports and the scaler plans.
A request ``GET /?s=SECONDS`` waits that long (at most 10 s) and answers the name of the pod that
served it (``RAY_CLOUD_INSTANCE_ID``, KubeRay sets it to the pod's name).
"""

from __future__ import annotations

import asyncio
import os

from ray import serve
from starlette.requests import Request


@serve.deployment
class Echo:
    async def __call__(self, request: Request) -> str:
        seconds = min(float(request.query_params.get("s", "0")), 10.0)
        await asyncio.sleep(seconds)
        return os.environ.get("RAY_CLOUD_INSTANCE_ID", "?")


app = Echo.bind()
