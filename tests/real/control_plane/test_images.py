"""e2e/images.py: the real node's images, OCI archives built here without Docker or a registry.

The pure tests (the Dockerfile's stages as image configs, cache keys, layers, layouts) run
anywhere; the pause tests need gcc (and root for the PID-1 one). The ``controlplane`` tests build
every image once per session into the e2e cache (root and debootstrap; minutes when cold, a
cache hit otherwise) and check what was built.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser  # type: ignore[import-untyped]  # no stubs
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from e2e import images

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "e2e" / "images.py"
#: One image, both commands (serve, agent): the Dockerfile has no agent stage any more.
PRODUCT = {"keda-ray-scaler": "scaler"}


# --- what the Dockerfile says, read with dockerfile-parse ------------------------------------


def dockerfile_says(stage: str) -> dict[str, Any]:
    """The ENV, USER, ENTRYPOINT, CMD, EXPOSE and WORKDIR of ``stage``, as written."""
    said: dict[str, Any] = {"env": {}, "ports": set()}
    current = None
    for item in DockerfileParser(path=str(ROOT / "Dockerfile")).structure:
        instruction, value = item["instruction"], item["value"]
        if instruction == "FROM":
            current = value.split()[-1]
        elif current != stage:
            continue
        elif instruction == "ENV":
            said["env"].update(w.split("=", 1) for w in shlex.split(value))
        elif instruction in ("USER", "WORKDIR"):
            said[instruction.lower()] = value
        elif instruction in ("ENTRYPOINT", "CMD"):
            said[instruction.lower()] = json.loads(value)
        elif instruction == "EXPOSE":
            said["ports"] |= {f"{port}/tcp" for port in value.split()}
    return said


def assert_config_is_the_stage(config: dict[str, Any], stage: str, base: dict[str, Any]) -> None:
    """``config`` holds exactly what ``stage`` says, on top of the stand-in ``base``."""
    said = dockerfile_says(stage)
    env = dict(e.split("=", 1) for e in config["Env"])
    assert {k: env.get(k) for k in said["env"]} == said["env"]
    assert config["User"] == said["user"]
    assert config["Entrypoint"] == said["entrypoint"]
    assert config["Cmd"] == said["cmd"]
    assert set(config.get("ExposedPorts", {})) == said["ports"]
    assert config.get("WorkingDir") == said.get("workdir", base.get("WorkingDir"))


def test_product_configs_say_what_the_dockerfile_stages_say() -> None:
    """The product image's User, Entrypoint, Cmd, Env, ExposedPorts and WorkingDir are its
    Dockerfile stage's, on the stand-in base's config."""
    configs = images.product_configs(ROOT / "Dockerfile")
    assert set(configs) == set(PRODUCT)
    for name, stage in PRODUCT.items():
        base, config = configs[name]
        assert_config_is_the_stage(config, stage, base.config)


def test_one_image_on_debian_python_runs_both_commands_without_ray() -> None:
    """The one product image stands on Debian's Python (its venv first on PATH, HOME /tmp), not
    on the Ray image; the Dockerfile has no other final stage, nothing installs Ray, and the
    image's user is the numeric non-root one the agent sidecar's securityContext names."""
    configs = images.product_configs(ROOT / "Dockerfile")
    base, config = configs["keda-ray-scaler"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert base.image == "rootfs"
    assert env["PATH"].startswith(f"{images.SCALER_VENV}/bin:")
    assert env["HOME"] == "/tmp"
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["keda-ray-scaler"]
    stages = images.dockerfile_stages(ROOT / "Dockerfile")
    assert sorted(stages) == ["build", "scaler"]
    assert all("rayproject/ray" not in s.base for s in stages.values())
    text = (ROOT / "Dockerfile").read_text()
    assert "agent.txt" not in text and not (ROOT / "locks" / "agent.txt").exists()
    lock = (ROOT / "locks" / "scaler.txt").read_text()
    assert not re.search(r"^ray==", lock, re.M)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["optional-dependencies"]["agent"] == []


def stage(*instructions: tuple[str, str]) -> images.Stage:
    return images.Stage("s", "base", instructions)


def test_an_entrypoint_clears_the_inherited_cmd_but_not_the_stage_own() -> None:
    """As docker build: ENTRYPOINT drops the base's Cmd, unless the stage set CMD before it."""
    base = {"Env": [], "Cmd": ["bash"]}
    assert "Cmd" not in images.stage_config(stage(("ENTRYPOINT", '["x"]')), base)
    cmd_first = images.stage_config(stage(("CMD", '["y"]'), ("ENTRYPOINT", '["x"]')), base)
    assert cmd_first["Cmd"] == ["y"]


def test_env_replaces_names_in_place_and_appends_new_ones() -> None:
    """ENV A=2 C=3 on A=1 B=1 gives A=2 B=1 C=3, in that order; the legacy ``ENV K V`` too."""
    base = {"Env": ["A=1", "B=1"]}
    config = images.stage_config(stage(("ENV", "A=2 C=3"), ("ENV", "D four 4")), base)
    assert config["Env"] == ["A=2", "B=1", "C=3", "D=four 4"]


def test_shell_form_and_relative_workdir_as_docker_build() -> None:
    """A shell-form CMD runs under /bin/sh -c; a relative WORKDIR joins the current one."""
    config = images.stage_config(
        stage(("WORKDIR", "/a"), ("WORKDIR", "b"), ("CMD", "echo hi")), {"Env": []}
    )
    assert config["WorkingDir"] == "/a/b"
    assert config["Cmd"] == ["/bin/sh", "-c", "echo hi"]


@pytest.mark.parametrize(
    "instruction",
    [("HEALTHCHECK", "CMD true"), ("VOLUME", "/data"), ("ENV", "A=$B"), ("USER", "${U}")],
    ids=["healthcheck", "volume", "env-variable", "user-variable"],
)
def test_what_the_script_cannot_replay_is_refused(instruction: tuple[str, str]) -> None:
    """An instruction the script does not replay, or a variable it does not expand, is an error
    that names it: the images never silently drift from the Dockerfile."""
    with pytest.raises(ValueError, match=instruction[0]):
        images.stage_config(stage(instruction), {"Env": []})


def test_a_base_image_without_stand_in_is_refused(tmp_path: Path) -> None:
    """A Dockerfile whose Python image moved to another version has no stand-in: an error."""
    text = (ROOT / "Dockerfile").read_text().replace("python:3.11-slim", "python:3.99-slim")
    (tmp_path / "Dockerfile").write_text(text)
    with pytest.raises(ValueError, match=r"python:3\.99-slim-bookworm"):
        images.product_configs(tmp_path / "Dockerfile")


def test_bases_pinned_by_digest_find_their_stand_in_by_tag(tmp_path: Path) -> None:
    """A digest after the tag (``make lock`` adds one to every base) keeps the stand-ins."""
    pinned = f"python:3.11-slim-bookworm@sha256:{'1' * 64}"
    text = (ROOT / "Dockerfile").read_text()
    text = re.sub(r"^ARG PYTHON_IMAGE=.*$", f"ARG PYTHON_IMAGE={pinned}", text, flags=re.M)
    assert pinned in text
    (tmp_path / "Dockerfile").write_text(text)
    configs = images.product_configs(tmp_path / "Dockerfile")
    assert configs["keda-ray-scaler"][0].image == "rootfs"


def test_each_stage_installs_its_own_lock() -> None:
    """The lock each stage's hashed install reads, as the Dockerfile COPYs it."""
    stages = images.dockerfile_stages(ROOT / "Dockerfile")
    found = {name: images.stage_lock(stages[name]) for name in ("build", "scaler")}
    assert found == {n: f"locks/{n}.txt" for n in found}


# --- what the images are built from: bases pinned by digest, hashed locks --------------------

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# Bases left unpinned on purpose (none since the agent image stopped being FROM rayproject/ray):
# any unpinned base is a fault.
UNPINNED_FOR_NOW: set[str] = set()
IMAGE_PYTHON = {"python_version": "3.11", "sys_platform": "linux", "platform_machine": "x86_64"}


def supply_chain_faults(dockerfile: Path) -> list[str]:
    """What lets a build take content nobody checked: a FROM without a digest (earlier stages
    aside), a ``pip install`` neither hash-checked from a lock nor offline without dependencies,
    a ``pip wheel`` that fetches (dependencies, or an isolated build backend)."""
    stages = images.dockerfile_stages(dockerfile)
    faults = []
    for stage in stages.values():
        pinned = stage.base in stages or DIGEST.search(stage.base)
        if not pinned and stage.base not in UNPINNED_FOR_NOW:
            faults.append(f"FROM {stage.base}")
        for instruction, value in stage.instructions:
            for command in re.split(r"&&|;|\|\|", value) if instruction == "RUN" else []:
                words = shlex.split(command)
                pip = words[words.index("pip") + 1 :] if "pip" in words else None
                if pip is None:
                    continue
                hashed = {"--require-hashes", "--no-deps", "-r"} <= set(pip)
                if pip[0] == "install" and (hashed or {"--no-index", "--no-deps"} <= set(pip)):
                    continue
                if pip[0] == "wheel" and {"--no-deps", "--no-build-isolation"} <= set(pip):
                    continue
                faults.append(command.strip())
    return faults


@pytest.mark.parametrize(
    "unpin",
    [r"@sha256:[0-9a-f]{64}", "--require-hashes ", "--no-build-isolation ", "--no-index "],
    ids=["base-digest", "require-hashes", "build-isolation", "wheel-offline"],
)
def test_the_dockerfile_pins_its_bases_and_checks_every_install(tmp_path: Path, unpin: str) -> None:
    """Every base image pinned by digest, every package from a hashed lock or the package's own
    wheel; dropping any one of those is caught."""
    assert supply_chain_faults(ROOT / "Dockerfile") == []
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(unpin, text)
    (tmp_path / "Dockerfile").write_text(re.sub(unpin, "", text, count=1))
    assert supply_chain_faults(tmp_path / "Dockerfile")


def lock_pins(lock: Path) -> tuple[dict[str, Version], set[str]]:
    """A lock's pins (each must carry a hash) and the names it says it excluded (none since the
    agent's lock, which left out what its Ray base image brought, went)."""
    text = lock.read_text()
    pins = {}
    for entry in re.split(r"\n(?=[A-Za-z0-9])", text):
        if pin := re.match(r"([A-Za-z0-9._-]+)==(\S+)", entry):
            assert "--hash=sha256:" in entry, f"{lock.name}: {pin[1]} has no hash"
            pins[canonicalize_name(pin[1])] = Version(pin[2])
    excluded = text.partition("excluded from the output:")[2]
    return pins, {canonicalize_name(n.strip("# ")) for n in excluded.splitlines() if n.strip()}


@pytest.mark.parametrize("lock", ["build", "scaler"])
def test_each_lock_pins_what_pyproject_needs(lock: str) -> None:
    """Every requirement of pyproject (the build backend for the build stage's lock, the runtime
    dependencies for the image's) is pinned with hashes at a version it accepts: a dependency
    added or raised without `make lock` fails."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needs = pyproject["build-system" if lock == "build" else "project"]
    pins, from_base = lock_pins(ROOT / "locks" / f"{lock}.txt")
    assert pins and not from_base
    for text in needs["requires" if lock == "build" else "dependencies"]:
        need = Requirement(text)
        name = canonicalize_name(need.name)
        if (need.marker and not need.marker.evaluate(IMAGE_PYTHON)) or name in from_base:
            continue
        assert name in pins, f"locks/{lock}.txt has no {name}: run make lock"
        assert need.specifier.contains(pins[name], prereleases=True), f"{lock}: {need}"


# --- cache keys -------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of what the product's key reads, plus a file it does not."""
    for name in ("Dockerfile", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "locks", tmp_path / "locks")
    shutil.copytree(
        ROOT / "keda_ray_scaler",
        tmp_path / "keda_ray_scaler",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    return tmp_path


@pytest.mark.parametrize(
    ("change", "rebuilds"),
    [
        ("keda_ray_scaler/model.py", True),
        ("keda_ray_scaler/new_module.py", True),
        ("pyproject.toml", True),
        ("README.md", True),
        ("LICENSE", True),
        ("Dockerfile", True),
        ("locks/build.txt", True),
        ("locks/scaler.txt", False),  # the scaler's layer's: test_a_lock_is_in_its_layers_key
        ("keda_ray_scaler/__pycache__/model.cpython-311.pyc", False),
        ("tests/test_x.py", False),
        ("docs.md", False),
    ],
)
def test_the_product_key_follows_its_sources_only(repo: Path, change: str, rebuilds: bool) -> None:
    """The product's key changes with a file the Dockerfile's build stage copies, and with the
    Dockerfile; not with __pycache__ or files outside."""
    before = images.product_wheels(repo).key
    path = repo / change
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write("\n# changed\n")
    assert (images.product_wheels(repo).key != before) is rebuilds
    assert images.product_wheels(repo).key == images.product_wheels(repo).key


def test_a_lock_is_in_its_layers_key(repo: Path) -> None:
    """The wheels of a stage's lock, and so its layer, are built again when the lock changes."""
    before = images.lock_wheels(repo / "locks" / "scaler.txt").key
    with (repo / "locks" / "scaler.txt").open("a") as f:
        f.write("\n# changed\n")
    assert images.lock_wheels(repo / "locks" / "scaler.txt").key != before


def test_a_failed_build_leaves_no_entry_and_the_next_run_builds(tmp_path: Path) -> None:
    """A build that dies leaves only ``<entry>.partial``; the next run starts it over."""
    cache = images.Cache(tmp_path)

    def fail(out: Path) -> None:
        (out / "half").write_text("")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        cache.get(images.Step("thing", "k", fail))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thing-k.partial"]

    def succeed(out: Path) -> None:
        (out / "whole").write_text("")

    entry = cache.get(images.Step("thing", "k", succeed))
    assert sorted(p.name for p in entry.iterdir()) == [".build-seconds", ".complete", "whole"]
    assert not (tmp_path / "thing-k.partial").exists()


def test_prune_keeps_the_last_used_entries_of_each_kind_and_recent_ones(tmp_path: Path) -> None:
    """Of four entries of one kind, the two last used stay and so does one used within
    ``unused_s``; the other goes, and so does a listing that named it. Other kinds and entries
    that are not images.py's stay."""

    def entry(name: str, used_s_ago: float) -> Path:
        (tmp_path / name).mkdir()
        (tmp_path / name / ".complete").touch()
        used = time.time() - used_s_ago
        os.utime(tmp_path / name / ".complete", (used, used))
        return tmp_path / name

    kind = "layer-keda-ray-scaler"
    newest, second, recent, oldest = (
        entry(f"{kind}-{i:016x}", ago) for i, ago in enumerate([10, 20, 30, 7200])
    )
    other_kind = entry(f"{kind}-agent-{0:016x}", 9000)
    foreign = entry(f"controlplane-{0:016x}", 9000)
    (tmp_path / "images-a").mkdir()
    (tmp_path / "images-a" / "images.json").write_text(
        json.dumps({"x": {"archive": str(oldest / "archive.tar")}})
    )
    images.prune(tmp_path, keep=2, unused_s=60)
    kept = {p.name for p in (newest, second, recent, other_kind, foreign)}
    assert {p.name for p in tmp_path.iterdir()} == kept


# --- layers and layouts -----------------------------------------------------------------------


def members(layer: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(layer) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_a_layer_keeps_modes_symlinks_and_hard_links(tmp_path: Path) -> None:
    """Modes (setuid, sticky), symlinks and hard links come out as in the tree, sorted."""
    tree = tmp_path / "tree"
    (tree / "bin").mkdir(parents=True)
    (tree / "tmp").mkdir(mode=0o1777)
    (tree / "tmp").chmod(0o1777)
    (tree / "bin" / "tool").write_text("#!/bin/sh\n")
    (tree / "bin" / "tool").chmod(0o4755)
    os.link(tree / "bin" / "tool", tree / "bin" / "tool2")
    (tree / "bin" / "sh").symlink_to("/bin/tool")
    layer = images.write_layer(tmp_path, tree, "test")
    found = members(layer.path)
    assert list(found) == ["bin", "bin/sh", "bin/tool", "bin/tool2", "tmp"]
    assert found["tmp"].mode == 0o1777
    assert found["bin/tool"].mode == 0o4755
    assert found["bin/sh"].issym() and found["bin/sh"].linkname == "/bin/tool"
    assert found["bin/tool2"].islnk() and found["bin/tool2"].linkname == "bin/tool"
    assert layer.digest == "sha256:" + hashlib.sha256(layer.path.read_bytes()).hexdigest()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown and mknod need root")
def test_a_layer_keeps_numeric_owners_and_writes_oci_whiteouts(tmp_path: Path) -> None:
    """Owners are numbers (no names from this host); an overlayfs whiteout (a 0/0 character
    device) becomes ``.wh.<name>``."""
    tree = tmp_path / "tree"
    (tree / "home" / "ray").mkdir(parents=True)
    os.chown(tree / "home" / "ray", 1000, 100)
    os.mknod(tree / "home" / "gone", 0o600 | 0o020000, os.makedev(0, 0))
    found = members(images.write_layer(tmp_path, tree, "test", overlay_upper=True).path)
    assert (found["home/ray"].uid, found["home/ray"].gid) == (1000, 100)
    assert (found["home/ray"].uname, found["home/ray"].gname) == ("", "")
    assert "home/gone" not in found and found["home/.wh.gone"].isreg()


def check_layout(layout: Path) -> dict[str, Any]:
    """Assert that ``layout`` is a valid one-image OCI layout and that ``archive.tar`` holds the
    same files; return the image's config."""

    def blob(descriptor: dict[str, Any]) -> bytes:
        data: bytes = (layout / "blobs" / "sha256" / descriptor["digest"][7:]).read_bytes()
        assert len(data) == descriptor["size"]
        assert descriptor["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        return data

    assert json.loads((layout / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((layout / "index.json").read_text())
    assert index["schemaVersion"] == 2
    [manifest_desc] = index["manifests"]
    assert manifest_desc["mediaType"] == images.OCI_MANIFEST
    ref = manifest_desc["annotations"]["io.containerd.image.name"]
    assert ref.startswith("localhost/krs/")
    assert manifest_desc["annotations"]["org.opencontainers.image.ref.name"] == ref.split(":")[-1]
    manifest = json.loads(blob(manifest_desc))
    assert manifest["config"]["mediaType"] == images.OCI_CONFIG
    config = json.loads(blob(manifest["config"]))
    diff_ids = []
    for layer in manifest["layers"]:
        assert layer["mediaType"] == images.OCI_LAYER  # uncompressed: digest == diff_id
        path = layout / "blobs" / "sha256" / layer["digest"].split(":")[1]
        assert path.stat().st_size == layer["size"]
        diff_ids.append(images.sha256_file(path))
    assert config["rootfs"] == {"type": "layers", "diff_ids": diff_ids}
    assert diff_ids == [layer["digest"] for layer in manifest["layers"]]
    with tarfile.open(layout / "archive.tar") as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        blobs = {f"blobs/sha256/{p.name}" for p in (layout / "blobs" / "sha256").iterdir()}
        assert set(files) == {"oci-layout", "index.json"} | blobs
        for name in ("oci-layout", "index.json", manifest_desc["digest"].replace(":", "/")):
            name = name if "/" not in name else f"blobs/{name}"
            extracted = tar.extractfile(files[name])
            assert extracted is not None and extracted.read() == (layout / name).read_bytes()
    return dict(config)


def test_an_image_is_a_valid_oci_layout_and_archive(tmp_path: Path) -> None:
    """Digests and sizes match the blobs, diff_ids match the layers, the ref is annotated for
    ``ctr import``, and archive.tar holds the same layout."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "hello").write_text("hi\n")
    layer = images.write_layer(tmp_path / "layer", tree, "hello")
    config = {"Env": ["PATH=/bin"], "Cmd": ["/hello"]}
    images.write_image(tmp_path / "image", "localhost/krs/hello:1", [layer], config)
    found = check_layout(tmp_path / "image")
    assert found["config"] == config
    assert found["history"] == [{"created_by": "hello"}]
    assert (found["architecture"], found["os"]) == ("amd64", "linux")


# --- pause ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pause(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is missing (Debian: build-essential)")
    return images.compile_pause(tmp_path_factory.mktemp("pause"))


def _wait_for(check: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Until ``check()`` holds (an observed state, not a guessed delay)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _state(pid: int) -> str:
    """The process state letter of /proc/<pid>/stat ("" once gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return ""


def _catches(pid: str, signo: int) -> bool:
    """Whether process ``pid`` has a handler for ``signo`` (``SigCgt`` of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signo - 1) & 1)
    return False


def _children(pid: str) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_pause_sleeps_until_sigterm_or_sigint_and_exits_0(pause: Path, signo: int) -> None:
    """pause blocks (state S: asleep in pause(2)) without exiting, then exits 0 on SIGTERM or
    SIGINT."""
    proc = subprocess.Popen([pause], stderr=subprocess.DEVNULL)
    _wait_for(lambda: _state(proc.pid) == "S" or proc.poll() is not None, "pause to block")
    assert proc.poll() is None
    proc.send_signal(signo)
    assert proc.wait(timeout=30) == 0


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root, unshare")
def test_pause_as_pid_1_reaps_orphans(pause: Path) -> None:
    """An orphan re-parented to pause (PID 1 of its PID namespace) leaves no zombie."""
    init = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", pause])
    pause_pid = ""
    try:
        _wait_for(lambda: bool(_children(str(init.pid))), "pause to start")
        pause_pid = _children(str(init.pid))[0]
        # unshare's child is seen at its fork, before it runs pause and pause catches SIGCHLD:
        # an orphan killed before that leaves a zombie no SIGCHLD will ever reap (CI, busy)
        _wait_for(lambda: _catches(pause_pid, signal.SIGCHLD), "pause to catch SIGCHLD")
        # sh exits at once; its child sleep is re-parented to pause and sleeps until killed
        subprocess.run(
            ["nsenter", "-t", pause_pid, "-p", "sh", "-c", "sleep 600 & exit 0"], check=True
        )
        _wait_for(lambda: bool(_children(pause_pid)), "the orphan to become pause's child")
        (orphan,) = _children(pause_pid)
        os.kill(int(orphan), signal.SIGKILL)
        # reaped: not even a zombie (a zombie stays in its parent's children until waited for)
        _wait_for(lambda: _children(pause_pid) == [], "pause to reap the orphan")
    finally:  # unshare waits for pause, which exits 0 on SIGTERM
        if pause_pid:
            os.kill(int(pause_pid), signal.SIGTERM)
        else:
            init.kill()
        init.wait(timeout=30)


# --- the built images (controlplane: they are the real node's) -------------------------------


def image_cache() -> Path:
    """The e2e cache of the real home (tests/conftest.py points HOME at a temporary one)."""
    if os.environ.get("KRS_E2E_CACHE"):
        return Path(os.environ["KRS_E2E_CACHE"])
    home = os.environ.get("KRS_REAL_HOME") or "/root"
    return Path(home) / ".cache" / "keda-ray-scaler" / "e2e"


def run_script() -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--cache", str(image_cache())],
        capture_output=True,
        text=True,
        check=False,
    )
    return done, time.monotonic() - start


@pytest.fixture(scope="session")
def built() -> dict[str, dict[str, Any]]:
    """Every image, built (or found) once per session: images.json."""
    if os.geteuid() != 0:
        pytest.skip("building the images needs root (debootstrap, chroot, overlay mounts)")
    if shutil.which("debootstrap") is None:
        pytest.skip("debootstrap is missing (Debian: apt-get install debootstrap)")
    done, _ = run_script()
    assert done.returncode == 0, done.stderr[-3000:]
    listing = Path(done.stdout.splitlines()[-1]) / "images.json"
    return dict(json.loads(listing.read_text()))


def layer_paths(record: dict[str, Any]) -> list[str]:
    layout = Path(record["layout"])
    index = json.loads((layout / "index.json").read_text())
    digest = index["manifests"][0]["digest"].split(":")[1]
    manifest = json.loads((layout / "blobs" / "sha256" / digest).read_text())
    return [layer["digest"] for layer in manifest["layers"]]


@pytest.mark.controlplane
@pytest.mark.timeout(1800)
def test_every_image_is_a_valid_oci_archive_named_for_ctr(built: dict[str, dict[str, Any]]) -> None:
    """Each of the four images is a valid layout and archive, named ``localhost/krs/<name>``."""
    assert set(built) == set(images.NAMES)
    for name, record in built.items():
        check_layout(Path(record["layout"]))
        assert record["ref"].startswith(f"localhost/krs/{name}:")
        assert Path(record["archive"]).is_absolute() and Path(record["archive"]).is_file()
    assert built["pause"]["ref"] == "localhost/krs/pause:1"
    assert built["busybox"]["ref"] == "localhost/krs/busybox:1"
    assert built["ray"]["ref"] == f"localhost/krs/ray:{images.RAY_VERSION}"


@pytest.mark.controlplane
@pytest.mark.timeout(1800)
def test_built_product_images_have_their_dockerfile_stage_config(
    built: dict[str, dict[str, Any]],
) -> None:
    """The built product image's config is what its Dockerfile stage says."""
    bases = {"keda-ray-scaler": images.DEBIAN_PYTHON_CONFIG}
    for name, stage in PRODUCT.items():
        config = check_layout(Path(built[name]["layout"]))["config"]
        assert_config_is_the_stage(config, stage, bases[name])


@pytest.mark.controlplane
@pytest.mark.timeout(1800)
def test_the_big_layers_are_stored_once(built: dict[str, dict[str, Any]]) -> None:
    """Ray and the product image (scaler and agent) share the Debian layer."""
    ray, product = (layer_paths(built[n]) for n in images.NAMES[2:])
    assert len(ray) == 2 and len(product) == 2
    assert ray[0] == product[0]
    assert ray[1] != product[1]


@pytest.mark.controlplane
@pytest.mark.timeout(1800)
def test_ray_image_runs_as_ray_with_debian_python(built: dict[str, dict[str, Any]]) -> None:
    """The Ray image runs as 1000 in /home/ray with its venv first on PATH; the venv (Debian's
    python3.11) and HOME belong to ray (1000:100)."""
    record = built["ray"]
    config = check_layout(Path(record["layout"]))["config"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert (config["User"], config["WorkingDir"]) == ("1000", "/home/ray")
    assert env["PATH"].startswith("/home/ray/venv/bin:")
    assert env["RAY_USAGE_STATS_ENABLED"] == "0"
    venv_layer = Path(record["layout"]) / "blobs" / "sha256" / layer_paths(record)[1].split(":")[1]
    found = members(venv_layer)
    for name in ("home/ray", "home/ray/venv/bin/ray"):
        assert (found[name].uid, found[name].gid) == (1000, 100)
    assert found["home/ray/venv/bin/python"].linkname.endswith("python3")
    assert found["usr/local/bin/http-probe"].mode == 0o755


@pytest.mark.controlplane
@pytest.mark.timeout(1800)
def test_a_cache_hit_builds_nothing(built: dict[str, dict[str, Any]]) -> None:
    """Run again with everything cached: nothing is built, the same images.json. (How long a
    cache hit takes is a figure the script prints, "ready in", not a test: a busy CI machine
    took 3.1 s where a quiet one takes 0.1 s.)"""
    done, _ = run_script()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "building" not in done.stderr
    assert "built 0.0 s of images now" in done.stderr
    listing = Path(done.stdout.splitlines()[-1]) / "images.json"
    assert json.loads(listing.read_text()) == built
