"""Who may call the scaler's gRPC port, and how many streams each may hold: checked at the door.

:class:`CallerGate` is a grpc.aio server interceptor on the main port (the plaintext probe port
serves health ``Check`` only and has none). Before any handler runs:

- **Identity.** Under mTLS the CA proves a client certificate genuine, not whose it is: the CA
  may sign other clients (the scaler's own server certificate, another team's). Only
  a certificate naming ``identity`` (its common name or a subject alternative name, as grpc's
  auth context gives them for a verified peer: ``x509_common_name``,
  ``x509_subject_alternative_name``) is served; any other is PERMISSION_DENIED, counted in
  ``keda_ray_scaler_refusals_total{reason="client_identity"}``. Without an identity (no mTLS, or
  ``--client-identity ""``) every caller the transport admitted is served.
- **Streams.** An ExternalScaler stream (``StreamIsActive``, ``StreamMetricSpec``) is admitted
  by :class:`~keda_ray_scaler.rpc.stream_quota.StreamQuota` for its connection and client
  address; beyond either bound it is RESOURCE_EXHAUSTED naming the flag, counted in
  ``keda_ray_scaler_limit_refusals_total{limit}``.

Every refusal is also counted in ``keda_ray_scaler_rpcs_total{method, code}`` and logged
(``rpc refused``) like the servicer's own. Handlers keep their kind: an async generator stays
one (grpc.aio tells a streaming handler from a coroutine by it).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import grpc
import structlog

from keda_ray_scaler.errors import Refusal
from keda_ray_scaler.rpc.server_settings import ServerSettings
from keda_ray_scaler.rpc.stream_quota import StreamQuota
from keda_ray_scaler.rpc.trigger import printable
from keda_ray_scaler.telemetry import ScalerMetrics

#: grpc's auth-context keys holding a verified client certificate's names.
NAME_KEYS: Final = ("x509_common_name", "x509_subject_alternative_name")
#: Names shown in a refusal at most (the client wrote them: each escaped and truncated).
_SHOWN_NAMES: Final = 4

_log = structlog.get_logger(__name__)

Behaviour = Callable[..., Any]
Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


def certificate_names(auth_context: Mapping[str, Any]) -> tuple[str, ...]:
    """The common name and subject alternative names of the verified client certificate (none
    without one), as grpc's ``context.auth_context()`` gives them."""
    names: list[str] = []
    for key in NAME_KEYS:
        for value in auth_context.get(key, ()):
            names.append(value.decode("utf-8", errors="replace"))
    return tuple(names)


class CallerGate(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc.aio is untyped here
    """The main port's door: the caller's identity (when ``identity``), and the stream quota for
    the response streams of ``service`` (``package.Service``)."""

    def __init__(
        self,
        *,
        identity: str | None,
        quota: StreamQuota,
        service: str,
        metrics: ScalerMetrics,
    ) -> None:
        #: the one client identity served; None: every caller the transport admitted
        self.identity = identity or None
        self.quota = quota
        self._prefix = f"/{service}/"
        self._metrics = metrics
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}

    @classmethod
    def for_settings(
        cls, settings: ServerSettings, service: str, metrics: ScalerMetrics
    ) -> CallerGate:
        """The gate the settings ask for: ``client_identity`` under mTLS only (without a client
        CA there is no verified certificate to read), the stream quota always."""
        tls = settings.tls
        mtls = tls is not None and tls.client_ca_file is not None
        return cls(
            identity=settings.client_identity if mtls else None,
            quota=StreamQuota(
                per_peer=settings.max_streams_per_peer,
                per_connection=settings.max_streams_per_connection,
            ),
            service=service,
            metrics=metrics,
        )

    async def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        """The handler of ``details.method``, guarded (built once per method)."""
        wrapped = self._wrapped.get(details.method)
        if wrapped is not None:
            return wrapped
        handler = await continuation(details)
        if handler is None:
            return None
        counted = details.method.startswith(self._prefix) and handler.response_streaming
        if self.identity is None and not counted:
            wrapped = handler
        else:
            wrapped = _rebuild(handler, lambda inner: self._guard(inner, details.method, counted))
        self._wrapped[details.method] = wrapped
        return wrapped

    def _guard(self, inner: Behaviour, path: str, counted: bool) -> Behaviour:
        """``inner`` behind the checks; an async generator stays one."""
        method = path.rpartition("/")[2]
        if inspect.isasyncgenfunction(inner):

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                peer = await self._admit(context, method, counted)
                try:
                    async for answer in inner(request, context):
                        yield answer
                finally:
                    if peer is not None:
                        self.quota.close(peer)

            return stream

        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            peer = await self._admit(context, method, counted)
            try:
                return await inner(request, context)
            finally:
                if peer is not None:
                    self.quota.close(peer)

        return call

    async def _admit(
        self, context: grpc.aio.ServicerContext, method: str, counted: bool
    ) -> str | None:
        """Abort the call unless its caller and (``counted``) its stream are admitted; the
        peer whose stream is now counted, else None."""
        if self.identity is not None:
            names = certificate_names(context.auth_context())
            if self.identity not in names:
                self._metrics.refusals.labels(Refusal.CLIENT_IDENTITY.value).inc()
                shown = ", ".join(f"'{printable(n)}'" for n in names[:_SHOWN_NAMES])
                await self._refuse(
                    context,
                    method,
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"the client certificate names {shown or 'nothing'}, not "
                    f"{self.identity!r}: only KEDA's certificate is served (--client-identity)",
                    reason=Refusal.CLIENT_IDENTITY,
                )
        if not counted:
            return None
        peer: str = context.peer()
        refused = self.quota.open(peer)
        if refused is not None:
            self._metrics.limits.labels(refused.limit.value).inc()
            await self._refuse(
                context,
                method,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                refused.message,
                limit=refused.limit,
            )
        return peer

    async def _refuse(
        self,
        context: grpc.aio.ServicerContext,
        method: str,
        code: grpc.StatusCode,
        text: str,
        **why: object,
    ) -> None:
        """Count, log and end the call with ``code``."""
        self._metrics.rpcs.labels(method, code.name).inc()
        _log.info("rpc refused", method=method, code=code.name, error=text, **why)
        await context.abort(code, text)


def _rebuild(
    handler: grpc.RpcMethodHandler, guard: Callable[[Behaviour], Behaviour]
) -> grpc.RpcMethodHandler:
    """``handler`` with its behaviour passed through ``guard``, of the same kind."""
    codecs = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(guard(handler.stream_stream), **codecs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(guard(handler.stream_unary), **codecs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(guard(handler.unary_stream), **codecs)
    return grpc.unary_unary_rpc_method_handler(guard(handler.unary_unary), **codecs)
