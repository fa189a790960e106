"""Write ``protos/ray/`` from an installed Ray wheel: the ``.proto`` files of Ray's GCS services
the agent calls, and the Apache License 2.0 they are under.

    python tools/ray_protos.py [PROTO_DIR]          (after a `pip install ray==<tag>`)

Ray's wheels carry no ``.proto`` files, only the modules protoc generated from them
(``ray/core/generated/*_pb2.py``), each embedding its file's ``FileDescriptorProto``: the
definitions exactly as Ray compiled them, without comments. This prints each descriptor back as
``.proto`` source, for ``autoscaler.proto``, ``gcs_service.proto`` and ``node_manager.proto``
(the raylet's ``GetResourceLoad``) and every file they import, under their paths in Ray's tree
(``src/ray/protobuf/...``), so the files protoc compiles from them are identical to Ray's own
(``tests/unit/gcs/test_gcs_protos.py`` compares the descriptors byte for byte while that Ray
version is
installed). Ray itself is never imported: the descriptors are
read from the module sources. The Ray version and commit are printed, for ``protos/ray/README.md``.
The wheel's own license file says only "Apache 2.0": ``LICENSE`` is the license's text, from this
repository's (the same unmodified Apache License 2.0 as Ray's).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from google.protobuf import descriptor_pb2 as d

ROOTS = (
    "src/ray/protobuf/autoscaler.proto",
    "src/ray/protobuf/gcs_service.proto",
    "src/ray/protobuf/node_manager.proto",
)
#: Files protoc ships (grpc_tools' include directory): imported, never copied.
WELL_KNOWN = "google/protobuf/"

_SCALARS = {
    d.FieldDescriptorProto.TYPE_DOUBLE: "double",
    d.FieldDescriptorProto.TYPE_FLOAT: "float",
    d.FieldDescriptorProto.TYPE_INT64: "int64",
    d.FieldDescriptorProto.TYPE_UINT64: "uint64",
    d.FieldDescriptorProto.TYPE_INT32: "int32",
    d.FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    d.FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    d.FieldDescriptorProto.TYPE_BOOL: "bool",
    d.FieldDescriptorProto.TYPE_STRING: "string",
    d.FieldDescriptorProto.TYPE_BYTES: "bytes",
    d.FieldDescriptorProto.TYPE_UINT32: "uint32",
    d.FieldDescriptorProto.TYPE_SFIXED32: "sfixed32",
    d.FieldDescriptorProto.TYPE_SFIXED64: "sfixed64",
    d.FieldDescriptorProto.TYPE_SINT32: "sint32",
    d.FieldDescriptorProto.TYPE_SINT64: "sint64",
}
_MAX_FIELD = 536_870_912  # exclusive end of "reserved N to max"

HEADER = """\
// Copyright The Ray Authors. Licensed under the Apache License, Version 2.0 (see LICENSE).
// {name} of Ray {version} (commit {commit}),
// printed back from its FileDescriptorProto in the ray=={version} wheel by tools/ray_protos.py
// (comments are not carried). Do not edit.
"""


def embedded_descriptor(module: Path) -> bytes:
    """The serialized ``FileDescriptorProto`` a protoc-generated ``_pb2.py`` passes to the pool."""
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "AddSerializedFile":
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, bytes):
                return arg.value
    raise RuntimeError(f"{module}: no AddSerializedFile(b'...') call")


def ray_descriptors(generated: Path) -> dict[str, d.FileDescriptorProto]:
    """Every file reachable from :data:`ROOTS`, by name (``src/ray/protobuf/x.proto``)."""
    found: dict[str, d.FileDescriptorProto] = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in found or name.startswith(WELL_KNOWN):
            continue
        module = generated / (Path(name).stem + "_pb2.py")
        proto = d.FileDescriptorProto.FromString(embedded_descriptor(module))
        if proto.name != name:
            raise RuntimeError(f"{module}: holds {proto.name}, expected {name}")
        found[name] = proto
        todo.extend(proto.dependency)
    return found


def json_default(name: str) -> str:
    """protoc's default ``json_name``: underscores dropped, the next letter upper-cased."""
    out: list[str] = []
    upper = False
    for char in name:
        if char == "_":
            upper = True
        else:
            out.append(char.upper() if upper else char)
            upper = False
    return "".join(out)


def _type(field: d.FieldDescriptorProto) -> str:
    return _SCALARS.get(field.type) or field.type_name


def _field(field: d.FieldDescriptorProto, maps: dict[str, d.DescriptorProto]) -> str:
    entry = maps.get(field.type_name)
    if entry is not None:
        key, value = entry.field
        text = f"map<{_type(key)}, {_type(value)}> {field.name} = {field.number}"
    else:
        label = ""
        if field.label == d.FieldDescriptorProto.LABEL_REPEATED:
            label = "repeated "
        elif field.proto3_optional:
            label = "optional "
        text = f"{label}{_type(field)} {field.name} = {field.number}"
    options = []
    if field.HasField("json_name") and field.json_name != json_default(field.name):
        options.append(f'json_name = "{field.json_name}"')
    if field.options.ByteSize():
        if [(f.name, v) for f, v in field.options.ListFields()] != [("deprecated", True)]:
            raise RuntimeError(f"{field.name}: unsupported options {field.options}")
        options.append("deprecated = true")
    return text + (f" [{', '.join(options)}]" if options else "") + ";"


def _reserved(message: d.DescriptorProto | d.EnumDescriptorProto, pad: str) -> Iterator[str]:
    end_is_inclusive = isinstance(message, d.EnumDescriptorProto)
    ranges = []
    for r in message.reserved_range:
        last = r.end if end_is_inclusive else r.end - 1
        top = "max" if r.end == _MAX_FIELD else str(last)
        ranges.append(str(r.start) if r.start == last else f"{r.start} to {top}")
    if ranges:
        yield f"{pad}reserved {', '.join(ranges)};"
    if message.reserved_name:
        names = ", ".join(f'"{n}"' for n in message.reserved_name)
        yield f"{pad}reserved {names};"


def _enum(enum: d.EnumDescriptorProto, depth: int) -> Iterator[str]:
    pad = "  " * depth
    if enum.options.ByteSize():
        raise RuntimeError(f"enum {enum.name}: unsupported options {enum.options}")
    yield f"{pad}enum {enum.name} {{"
    yield from _reserved(enum, pad + "  ")
    for value in enum.value:
        if value.options.ByteSize():
            raise RuntimeError(f"{value.name}: unsupported options {value.options}")
        yield f"{pad}  {value.name} = {value.number};"
    yield f"{pad}}}"


def _message(message: d.DescriptorProto, scope: str, depth: int) -> Iterator[str]:
    """One message; nested types keep their order relative to the map fields (each map field
    declares its entry type where it stands)."""
    pad = "  " * depth
    here = f"{scope}.{message.name}"
    if message.extension or message.extension_range or message.options.ByteSize():
        raise RuntimeError(f"{here}: extensions or options are not supported")
    maps = {f"{here}.{n.name}": n for n in message.nested_type if n.options.map_entry}
    pending = list(message.nested_type)
    yield f"{pad}message {message.name} {{"
    yield from _reserved(message, pad + "  ")
    for enum in message.enum_type:
        yield from _enum(enum, depth + 1)
    open_oneof: int | None = None
    for field in message.field:
        if field.type_name in maps:  # nested types declared before this map field come first
            while pending and f"{here}.{pending[0].name}" != field.type_name:
                yield from _message(pending.pop(0), here, depth + 1)
            pending.pop(0)
        real_oneof = field.HasField("oneof_index") and not field.proto3_optional
        index = field.oneof_index if real_oneof else None
        if index != open_oneof:
            if open_oneof is not None:
                yield f"{pad}  }}"
            if index is not None:
                yield f"{pad}  oneof {message.oneof_decl[index].name} {{"
            open_oneof = index
        inner = "    " if open_oneof is not None else "  "
        yield f"{pad}{inner}{_field(field, maps)}"
    if open_oneof is not None:
        yield f"{pad}  }}"
    for nested in pending:
        yield from _message(nested, here, depth + 1)
    yield f"{pad}}}"


def to_source(proto: d.FileDescriptorProto, version: str, commit: str) -> str:
    """``.proto`` text whose compiled descriptor equals ``proto``."""
    if proto.syntax != "proto3" or proto.extension or proto.public_dependency:
        raise RuntimeError(f"{proto.name}: only plain proto3 files are supported")
    lines = [HEADER.format(version=version, commit=commit, name=proto.name)]
    lines.append('syntax = "proto3";\n')
    lines.append(f"package {proto.package};\n")
    lines.extend(f'import "{dep}";' for dep in proto.dependency)
    if proto.dependency:
        lines.append("")
    for field, value in proto.options.ListFields():
        text = f'"{value}"' if isinstance(value, str) else str(value).lower()
        lines.append(f"option {field.name} = {text};")
    if proto.options.ByteSize():
        lines.append("")
    for enum in proto.enum_type:
        lines.extend(_enum(enum, 0))
        lines.append("")
    for message in proto.message_type:
        lines.extend(_message(message, f".{proto.package}", 0))
        lines.append("")
    for service in proto.service:
        if service.options.ByteSize():
            raise RuntimeError(f"service {service.name}: options are not supported")
        lines.append(f"service {service.name} {{")
        for m in service.method:
            if m.options.ByteSize():
                raise RuntimeError(f"{service.name}.{m.name}: options are not supported")
            arg = ("stream " if m.client_streaming else "") + m.input_type
            out = ("stream " if m.server_streaming else "") + m.output_type
            lines.append(f"  rpc {m.name}({arg}) returns ({out});")
        lines.append("}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def ray_install() -> tuple[Path, str, str]:
    """Ray's package directory, version and commit (from ``ray/_version.py``)."""
    spec = importlib.util.find_spec("ray")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("Ray is not installed: pip install ray==<the tag to vendor>")
    package = Path(next(iter(spec.submodule_search_locations)))
    version_py = (package / "_version.py").read_text()
    version = re.search(r'^version = "([^"]+)"', version_py, re.M)
    commit = re.search(r'^commit = "([0-9a-f]{40})"', version_py, re.M)
    if version is None or commit is None:
        raise SystemExit(f"{package}/_version.py: no version or commit")
    return package, version.group(1), commit.group(1)


def main(argv: list[str] | None = None) -> int:
    """Write the files into ``protos/ray`` (or the directory given)."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parents[1]
    out = Path(args[0]) if args else root / "protos" / "ray"
    package, version, commit = ray_install()
    for name, proto in sorted(ray_descriptors(package / "core" / "generated").items()):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_source(proto, version, commit))
        print(path)
    shutil.copyfile(root / "LICENSE", out / "LICENSE")
    print(f"ray {version} commit {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
