"""Ray's GCS protocol as vendored in ``protos/ray/``: Ray's own definitions, and generated-code
drift (``make proto``).

The comparisons with Ray need the Ray version the files come from (``protos/ray/README.md``)
installed; they read its generated modules' sources and never import Ray.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from keda_ray_scaler.gcs import ray_protogen
from tools import ray_protos

README = ray_protogen.PROTO_DIR / "README.md"


def vendored_version() -> tuple[str, str]:
    """The Ray version and commit the README names."""
    text = README.read_text()
    version = re.search(r"Ray \*\*(\d+\.\d+\.\d+)\*\*", text)
    commit = re.search(r"commit\s+`([0-9a-f]{40})`", text)
    assert version and commit, "protos/ray/README.md names no version or commit"
    return version[1], commit[1]


def installed_ray() -> Path:
    """The installed Ray's package directory; skips unless it is the vendored version."""
    try:
        package, version, commit = ray_protos.ray_install()
    except SystemExit as exc:
        pytest.skip(str(exc))
    if (version, commit) != vendored_version():
        pytest.skip(f"Ray {version} installed, the files are {vendored_version()[0]}'s")
    return package


def test_generated_code_matches_a_fresh_make_proto(tmp_path: Path) -> None:
    """Regenerating into a temporary directory gives byte-identical files."""
    fresh = ray_protogen.generate(tmp_path)
    committed = sorted(p for p in ray_protogen.OUT_DIR.iterdir() if p.suffix in {".py", ".pyi"})
    assert [p.name for p in fresh] == [p.name for p in committed]
    for new, old in zip(fresh, committed, strict=True):
        assert new.read_bytes() == old.read_bytes(), f"{old.name} drifted: run `make proto`"


def test_generated_modules_import_each_other_from_the_package() -> None:
    """No ``src.ray.protobuf`` import is left: the package imports without Ray's tree."""
    for path in ray_protogen.OUT_DIR.glob("*.py*"):
        assert not re.search(r"^(from|import) src\b", path.read_text(), re.M), path.name


def test_the_files_are_what_the_tool_prints_from_the_installed_ray() -> None:
    """protos/ray/ is tools/ray_protos.py's output for the Ray version the README names."""
    package = installed_ray()
    version, commit = vendored_version()
    found = ray_protos.ray_descriptors(package / "core" / "generated")
    vendored = ray_protogen.protos()
    assert sorted(found) == vendored
    for name, proto in found.items():
        ours = (ray_protogen.PROTO_DIR / name).read_text()
        assert ours == ray_protos.to_source(proto, version, commit), name


def without_json_names(serialized: bytes) -> descriptor_pb2.FileDescriptorProto:
    """The file's descriptor without ``json_name``: Ray's build records protoc's default JSON
    name of every field, grpcio-tools' Python generator leaves them out (the same names)."""
    proto = descriptor_pb2.FileDescriptorProto.FromString(serialized)
    messages = list(proto.message_type)
    while messages:
        message = messages.pop()
        messages.extend(message.nested_type)
        for field in message.field:
            field.ClearField("json_name")
    return proto


def test_each_generated_module_holds_rays_descriptor() -> None:
    """Each module's FileDescriptorProto is the one Ray's module of the same name registers."""
    package = installed_ray()
    for name in ray_protogen.protos():
        module = Path(name).stem + "_pb2.py"
        theirs = ray_protos.embedded_descriptor(package / "core" / "generated" / module)
        ours = ray_protos.embedded_descriptor(ray_protogen.OUT_DIR / module)
        assert without_json_names(ours) == without_json_names(theirs), name


def test_the_modules_load_beside_rays_own_in_one_process() -> None:
    """They register in a pool of their own: Ray's same-named files never clash with them."""
    installed_ray()
    from ray.core.generated import autoscaler_pb2 as theirs

    from keda_ray_scaler.gcs._generated import POOL
    from keda_ray_scaler.gcs._generated import autoscaler_pb2 as ours

    assert ours.DESCRIPTOR.pool is POOL
    reply = theirs.GetClusterStatusReply()
    reply.cluster_resource_state.node_states.add().instance_id = "ray-cpu-a"
    again = ours.GetClusterStatusReply.FromString(reply.SerializeToString())
    assert again.cluster_resource_state.node_states[0].instance_id == "ray-cpu-a"
