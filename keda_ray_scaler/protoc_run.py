"""What :mod:`keda_ray_scaler.rpc.keda_protogen` and :mod:`keda_ray_scaler.gcs.ray_protogen` share.

:func:`run_protoc` calls grpc_tools' protoc with protobuf's own files on the include path;
:func:`main` is the command line of both (``python -m keda_ray_scaler.rpc.keda_protogen
[OUT_DIR]``).
grpcio-tools is a dev dependency, imported only when generating.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def run_protoc(proto_dir: Path, flags: Sequence[str], files: Sequence[str], what: str) -> None:
    """protoc on ``files`` of ``proto_dir`` with the output ``flags`` (``--python_out=DIR``).

    Raises ``RuntimeError`` with protoc's exit code, naming ``what``, when protoc fails (its
    messages go to stderr).
    """
    # grpcio-tools is a dev dependency (imported only when generating) and ships no stubs.
    from grpc_tools import protoc  # type: ignore[import-untyped]

    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["grpc_tools.protoc", f"-I{proto_dir}", f"-I{include}", *flags, *files])
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code} on {what}")


def main(generate: Callable[[Path], list[Path]], out_dir: Path, argv: list[str] | None) -> int:
    """Regenerate into ``out_dir`` or the directory given as the only argument; print each
    file written."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else out_dir
    for path in generate(out):
        print(path)
    return 0
