"""``keda-ray-scaler status``: ask a running scaler what KEDA would get, as KEDA asks it.

For each worker group: ``GetMetricSpec`` (the metric name), ``GetMetrics`` (the target, the
data age from the trailing metadata ``krs-data-age-seconds`` and the label selectors of the
demand planned onto the group's pods from ``krs-label-selectors``) and ``IsActive``, with the
trigger metadata a ScaledObject carries (``rayCluster``, ``workerGroup``, ``maxAgeSeconds``),
the namespace a ScaledObject lives in (``--namespace``: the scaler answers a namespace only about
its own Ray clusters) and the TLS of KEDA's TriggerAuthentication (``caCert``,
``tlsClientCert``, ``tlsClientKey``). Exit 0 when every group answered, 1 when one did not
(its gRPC status is printed), 2 on bad flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

import grpc

from keda_ray_scaler.cli import add_command
from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.rpc._generated import externalscaler_pb2 as pb
from keda_ray_scaler.rpc._generated import externalscaler_pb2_grpc as pb_grpc
from keda_ray_scaler.rpc.servicer import DATA_AGE_KEY, SELECTORS_KEY
from keda_ray_scaler.rpc.trigger import KEY_CLUSTER, KEY_GROUP, KEY_MAX_AGE

_WHERE = "status"
EXIT_UNANSWERED = 1


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``status`` and its flags."""
    p = add_command(
        subparsers,
        "status",
        "Call a running scaler like KEDA does and print each worker group's "
        "target, active flag, data age and the label selectors behind its target.",
    )
    p.add_argument("--address", required=True, help="the scaler's HOST:PORT (KEDA's scalerAddress)")
    g = p.add_argument_group("worker groups")
    g.add_argument(
        "--namespace",
        default="default",
        help="namespace of the ScaledObjects, and so of the Ray cluster (default)",
    )
    g.add_argument("--cluster", help="Ray cluster name (rayCluster)")
    g.add_argument(
        "--group", action="append", default=[], help="worker group (workerGroup); repeat"
    )
    g.add_argument(
        "--cluster-spec", type=Path, help="cluster spec file: its cluster and every group"
    )
    g.add_argument("--max-age", type=int, help="maxAgeSeconds of the trigger (server's default)")
    g = p.add_argument_group("TLS (as KEDA's TriggerAuthentication)")
    g.add_argument("--ca-cert", type=Path, help="CA of the server certificate (caCert); TLS")
    g.add_argument("--tls-client-cert", type=Path, help="client certificate (mTLS)")
    g.add_argument("--tls-client-key", type=Path, help="client private key (mTLS)")
    g.add_argument("--server-name", help="name expected in the server certificate")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per call (5)")
    p.add_argument("--output", choices=("table", "json"), default="table")


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """What KEDA would get for one worker group, or the gRPC status that refused it."""

    cluster: str
    group: str
    target: int | None = None
    active: bool | None = None
    data_age_s: float | None = None
    error: str | None = None
    #: the label selectors of the demand planned onto the group's pods (``|`` between lists)
    selectors: str = ""


def _check(ok: bool, flag: str, problem: str) -> None:
    if not ok:
        raise ConfigError(_WHERE, flag, problem)


def _read(path: Path | None, flag: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(_WHERE, flag, f"{path}: {exc.strerror}") from exc


def credentials(args: argparse.Namespace) -> grpc.ChannelCredentials | None:
    """TLS credentials from the flags; None for plaintext. ConfigError naming the flag."""
    client = (args.tls_client_cert, args.tls_client_key)
    _check(all(client) or not any(client), "--tls-client-key", "goes with --tls-client-cert")
    if args.ca_cert is None:
        _check(not any(client), "--ca-cert", "required with a client certificate (mTLS)")
        return None
    return grpc.ssl_channel_credentials(
        root_certificates=_read(args.ca_cert, "--ca-cert"),
        private_key=_read(args.tls_client_key, "--tls-client-key"),
        certificate_chain=_read(args.tls_client_cert, "--tls-client-cert"),
    )


def targets(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(cluster, group) pairs from ``--cluster``/``--group`` or ``--cluster-spec``."""
    if args.cluster_spec is not None:
        from keda_ray_scaler.config import load_cluster_spec

        _check(not args.group, "--group", "not with --cluster-spec")
        spec = load_cluster_spec(args.cluster_spec)
        cluster = args.cluster or spec.name
        return [(cluster, g.name) for g in spec.worker_groups]
    _check(bool(args.cluster), "--cluster", "required (or --cluster-spec)")
    _check(bool(args.group), "--group", "at least one required (or --cluster-spec)")
    return [(args.cluster, g) for g in args.group]


def ask(
    stub: pb_grpc.ExternalScalerStub,
    cluster: str,
    group: str,
    *,
    max_age_s: int | None,
    timeout_s: float,
    namespace: str = "default",
) -> GroupStatus:
    """The three calls KEDA makes for one trigger; the first refusal ends them."""
    metadata = {KEY_CLUSTER: cluster, KEY_GROUP: group}
    if max_age_s is not None:
        metadata[KEY_MAX_AGE] = str(max_age_s)
    ref = pb.ScaledObjectRef(
        name=f"{cluster}-{group}", namespace=namespace, scalerMetadata=metadata
    )
    try:
        spec = stub.GetMetricSpec(ref, timeout=timeout_s)
        name = spec.metricSpecs[0].metricName
        reply, call = stub.GetMetrics.with_call(
            pb.GetMetricsRequest(scaledObjectRef=ref, metricName=name), timeout=timeout_s
        )
        active = stub.IsActive(ref, timeout=timeout_s)
    except grpc.RpcError as exc:
        code = exc.code().name if isinstance(exc, grpc.Call) else "UNKNOWN"
        details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
        first = (details or "").splitlines()[0] if details else ""
        return GroupStatus(cluster, group, error=f"{code}: {first}")
    trailing = dict(call.trailing_metadata() or ())
    age = trailing.get(DATA_AGE_KEY)
    return GroupStatus(
        cluster,
        group,
        target=int(reply.metricValues[0].metricValue),
        active=bool(active.result),
        data_age_s=float(age) if age is not None else None,
        selectors=str(trailing.get(SELECTORS_KEY, "")),
    )


def render(rows: Sequence[GroupStatus], out: TextIO, output: str) -> None:
    """A table (or JSON lines) of the answers; the SELECTORS column only when a group's
    target has label selectors behind it (an error then goes in that last column)."""
    if output == "json":
        for row in rows:
            print(json.dumps(asdict(row)), file=out)
        return
    show = any(r.selectors for r in rows)
    table: list[tuple[str, ...]] = [
        ("CLUSTER", "GROUP", "TARGET", "ACTIVE", "DATA AGE", *(("SELECTORS",) if show else ()))
    ]
    for r in rows:
        if r.error is not None:
            table.append((r.cluster, r.group, "-", "-", *(("-",) if show else ()), r.error))
            continue
        age = "?" if r.data_age_s is None else f"{r.data_age_s:.1f} s"
        answer = (r.cluster, r.group, str(r.target), str(r.active).lower(), age)
        table.append((*answer, r.selectors or "-") if show else answer)
    padded = len(table[0]) - 1
    widths = [max(len(row[i]) for row in table) for i in range(padded)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        print("  ".join([*cells, line[padded]]), file=out)


def run(args: argparse.Namespace) -> int:
    """Ask the scaler for every group; exit 0 when all answered."""
    _check(args.timeout > 0, "--timeout", "must be > 0")
    host, sep, port = args.address.rpartition(":")
    _check(bool(sep and host and port.isdigit()), "--address", f"not HOST:PORT: {args.address!r}")
    pairs = targets(args)
    creds = credentials(args)
    options = [("grpc.ssl_target_name_override", args.server_name)] if args.server_name else []
    channel = (
        grpc.secure_channel(args.address, creds, options=options)
        if creds is not None
        else grpc.insecure_channel(args.address)
    )
    with channel:
        stub = pb_grpc.ExternalScalerStub(channel)
        rows = [
            ask(
                stub,
                cluster,
                group,
                max_age_s=args.max_age,
                timeout_s=args.timeout,
                namespace=args.namespace,
            )
            for cluster, group in pairs
        ]
    render(rows, sys.stdout, args.output)
    return EXIT_UNANSWERED if any(r.error for r in rows) else 0
