"""Build the real node's container images as OCI archives: no Docker engine, no registry.

    python e2e/images.py [--cache DIR] [NAME ...]      (default: every image; needs root)

The last line of stdout is a directory holding ``images.json``::

    {"<name>": {"ref": "localhost/krs/<name>:<tag>", "archive": "<abs path>",
                "layout": "<abs path>", "digest": "sha256:<manifest>",
                "size_bytes": <sum of layer sizes>}}

``archive`` is an OCI image archive that ``ctr -n k8s.io images import --all-platforms`` accepts
(it names the image from the ``io.containerd.image.name`` annotation); ``layout`` is the same
image as an OCI image layout directory. Progress and timings go to stderr.

Images (``NAME``):
  pause                   the pod sandbox: a static C pause (sleeps until SIGTERM/SIGINT, reaps
                          zombies, as Kubernetes' build/pause/linux/pause.c)
  busybox                 Debian's busybox-static and its applet links, for node smoke tests
  ray                     Ray 2.60.0 on Debian bookworm's Python 3.11.2, shaped as
                          rayproject/ray: user ray (1000:100), HOME /home/ray, its venv first
                          on PATH; /usr/local/bin/http-probe for exec probes (no wget, no curl)
  keda-ray-scaler         the Dockerfile's ``scaler`` stage: the one product image, both commands
                          (``keda-ray-scaler serve``, and ``keda-ray-scaler agent`` in the Ray
                          head pod: the agent needs no Ray)

The product image is derived from ``Dockerfile`` (read with dockerfile-parse), so the two
cannot drift: each stage's ENV, USER, ENTRYPOINT, CMD, EXPOSE and WORKDIR go into the image config
as written, on top of its base image's config, as ``docker build`` does. Their content steps are
done here as the stages say: the ``build`` stage's ``pip wheel --no-deps --no-build-isolation``
from the files it COPYs, with the build backend of its hashed lock; each stage's ``pip install
--require-hashes --no-deps -r`` of the lock its RUN names (locks/, wheels fetched and checked by
the host's pip, installed offline), then the package's wheel, then ``pip check``. Any other
instruction, or a base image without a stand-in, is an error.
The Dockerfile's base image (pinned by digest, chosen here by repository:tag) cannot be pulled
here and is replaced: ``python:3.11-slim-bookworm`` by a Debian bookworm rootfs (``debootstrap
--variant=minbase --include=python3,python3-venv``) with a venv on Debian's python3. The ``ray``
image stands in for ``rayproject/ray`` (the Ray pods' image): head, workers and drivers must all
run Debian's Python 3.11.2, as Ray refuses a Python micro-version mismatch.

Layers are uncompressed tars written with :mod:`tarfile` (numeric owners, modes, symlinks and
hardlinks as in the tree). The big layer is shared, so containerd stores it once: the rootfs
(``ray``, ``keda-ray-scaler``); Ray's venv and the product are layers of their own. Every image
and layer lives in the cache under a key that hashes its inputs (its recipe's source, versions,
and for the product the Dockerfile, the files its build stage copies (pyproject.toml, README.md,
locks/build.txt, the keda_ray_scaler/ tree without __pycache__) and the stage's lock): a cache
hit builds nothing. A build goes into
``<entry>.partial`` and is renamed when complete; chroot steps run in an overlay mount whose upper
directory becomes the layer, and every mount is removed before the step returns. One run at a
time per cache (a lock); each run removes the entries of a kind beyond the two last used, unless
used within the hour. Cold, on 2 cores: ~1.5-2.5 min (debootstrap ~75 s); warm <1 s.

Environment: KRS_E2E_CACHE (default ~/.cache/keda-ray-scaler/e2e).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import inspect
import json
import os
import posixpath
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
REF_PREFIX = "localhost/krs"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
RAY_VERSION = "2.60.0"
#: what rayproject/ray holds and the bed's workloads use: the dashboard and job submission
#: (RayJob), Serve (RayService)
RAY_REQUIREMENT = f"ray[default,serve]=={RAY_VERSION}"
RAY_UID, RAY_GID = 1000, 100  # rayproject/ray: user "ray", group "users"
RAY_HOME = "/home/ray"
RAY_VENV = f"{RAY_HOME}/venv"
SCALER_VENV = "/opt/venv"
# manylinux tags that bookworm's glibc 2.36 runs, newest first (pip does not expand them itself)
MANYLINUX = [f"manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
]
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
KEEP = 2  # entries of each kind kept in the cache (this run's and the one before), at least
NAMES = ("pause", "busybox", "ray", "keda-ray-scaler")


def log(message: str) -> None:
    """Progress for the person watching: stderr, one line."""
    print(f"images.py: {message}", file=sys.stderr, flush=True)


def run(*argv: str | Path, env: dict[str, str] | None = None, quiet: bool = False) -> str:
    """Run a command, return its stdout; its stderr goes to ours (unless ``quiet``)."""
    proc = subprocess.run(
        [str(a) for a in argv],
        env=env,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if quiet else None,
        text=True,
    )
    if proc.returncode != 0:
        detail = proc.stderr[-2000:] if quiet and proc.stderr else ""
        raise RuntimeError(
            f"{argv[0]} exited {proc.returncode}: {' '.join(map(str, argv))}\n{detail}"
        )
    return proc.stdout


def sha256_file(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def key_of(*parts: object) -> str:
    """16 hex digits of a hash of ``parts`` (strings, bytes, or JSON values)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else json.dumps(part, sort_keys=True).encode()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:16]


# --- mounts and chroots ---------------------------------------------------------------------


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below ``path``, deepest first."""
    prefix = str(path.resolve())
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(point)
    return sorted(found, key=len, reverse=True)


def unmount_under(path: Path) -> None:
    """Unmount everything at or below ``path`` (a killed build may have left mounts)."""
    for point in mounts_under(path):
        if subprocess.run(["umount", point], check=False).returncode != 0:
            run("umount", "--lazy", point)
    if left := mounts_under(path):
        raise RuntimeError(f"still mounted under {path}: {left}")


def remove_tree(path: Path) -> None:
    """``rm -rf`` that never descends into a mount (a bound /dev, say)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        unmount_under(path)
        run("rm", "-rf", "--one-file-system", path)


@contextlib.contextmanager
def overlay(lowers: Sequence[Path], upper: Path, work: Path, merged: Path) -> Iterator[Path]:
    """An overlay mount of ``lowers`` (first = top) under ``upper``, with /proc and /dev for a
    chroot; everything is unmounted on the way out."""
    for d in (upper, work, merged):
        d.mkdir(parents=True, exist_ok=True)
    lowerdir = ":".join(str(p) for p in lowers)
    try:
        options = f"lowerdir={lowerdir},upperdir={upper},workdir={work}"
        run("mount", "-t", "overlay", "overlay", "-o", options, merged)
        run("mount", "-t", "proc", "proc", merged / "proc")
        run("mount", "--bind", "/dev", merged / "dev")
        yield merged
    finally:
        unmount_under(merged)
        shutil.rmtree(work, ignore_errors=True)


def chroot(root: Path, *argv: str, user: str = "0:0", env: dict[str, str]) -> str:
    """Run ``argv`` inside ``root`` as ``user`` with exactly ``env``."""
    return run(
        "chroot",
        f"--userspec={user}",
        root,
        "/usr/bin/env",
        "-i",
        *(f"{k}={v}" for k, v in env.items()),
        *argv,
    )


# --- layers, configs and images -------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """An uncompressed layer tar: its digest is also its diff_id."""

    path: Path
    digest: str
    size: int
    created_by: str

    @classmethod
    def load(cls, directory: Path) -> Layer:
        """The layer a step wrote into ``directory`` (``layer.tar`` and ``layer.json``)."""
        meta = json.loads((directory / "layer.json").read_text())
        return cls(directory / "layer.tar", meta["digest"], meta["size"], meta["created_by"])


def tree_entries(root: Path, rel: str = "") -> Iterator[tuple[str, Path]]:
    """``(archive name, path)`` for everything below ``root``, sorted, parents first; symlinks
    are entries, never followed."""
    for entry in sorted(os.scandir(root / rel if rel else root), key=lambda e: e.name):
        name = f"{rel}/{entry.name}" if rel else entry.name
        yield name, Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            yield from tree_entries(root, name)


def write_layer(
    directory: Path,
    root: Path,
    created_by: str,
    *,
    skip: Callable[[str], bool] = lambda name: False,
    overlay_upper: bool = False,
) -> Layer:
    """Write the tree ``root`` as ``directory/layer.tar`` (and ``layer.json``): numeric owners,
    modes, symlinks and hard links as in the tree, mtimes in whole seconds. With
    ``overlay_upper``, overlayfs whiteouts (0/0 character devices) and opaque directories become
    OCI whiteouts (``.wh.<name>``, ``<dir>/.wh..wh..opq``)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "layer.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, p in tree_entries(root):
            if skip(name):
                continue
            st = p.lstat()
            if overlay_upper and stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                parent, _, base = name.rpartition("/")
                whiteout = tarfile.TarInfo(f"{parent}/.wh.{base}" if parent else f".wh.{base}")
                whiteout.mtime = int(st.st_mtime)
                tar.addfile(whiteout)
                continue
            info = tar.gettarinfo(str(p), arcname=name)
            if info is None:  # a socket: nothing to keep
                continue
            info.uname = info.gname = ""
            info.mtime = int(info.mtime)
            if info.isreg():
                with p.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
            if overlay_upper and info.isdir() and _opaque(p):
                opaque = tarfile.TarInfo(f"{name}/.wh..wh..opq")
                opaque.mtime = info.mtime
                tar.addfile(opaque)
    layer = Layer(path, sha256_file(path), path.stat().st_size, created_by)
    meta = {"digest": layer.digest, "size": layer.size, "created_by": created_by}
    (directory / "layer.json").write_text(json.dumps(meta, indent=1) + "\n")
    return layer


def _opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, "trusted.overlay.opaque") == b"y"
    except OSError:
        return False


def env_list(env: dict[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in env.items()]


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, indent=1, sort_keys=True).encode() + b"\n"


def _blob(layout: Path, data: bytes) -> dict[str, Any]:
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
    (layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).write_bytes(data)
    return {"digest": digest, "size": len(data)}


def write_image(
    directory: Path, ref: str, layers: Sequence[Layer], config: dict[str, Any]
) -> dict[str, Any]:
    """Write ``directory`` as the OCI image layout of one image named ``ref`` (layer blobs are
    hard links to the layer tars), ``archive.tar`` (the same layout as one tar) and
    ``image.json`` (ref, manifest digest, sizes). ``config`` is the config's ``config`` object."""
    blobs = directory / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    for layer in layers:
        target = blobs / layer.digest.removeprefix("sha256:")
        if not target.exists():
            try:
                os.link(layer.path, target)
            except OSError:
                shutil.copyfile(layer.path, target)
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in layers]},
        "history": [{"created_by": layer.created_by} for layer in layers],
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, **_blob(directory, _json_bytes(image_config))},
        "layers": [
            {"mediaType": OCI_LAYER, "digest": layer.digest, "size": layer.size} for layer in layers
        ],
    }
    manifest_desc = {
        "mediaType": OCI_MANIFEST,
        **_blob(directory, _json_bytes(manifest)),
        "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {
            "io.containerd.image.name": ref,
            "org.opencontainers.image.ref.name": ref.rpartition(":")[2],
        },
    }
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [manifest_desc]}
    (directory / "index.json").write_bytes(_json_bytes(index))
    (directory / "oci-layout").write_bytes(_json_bytes({"imageLayoutVersion": "1.0.0"}))
    names = ["oci-layout", "index.json", "blobs", "blobs/sha256"]
    with tarfile.open(directory / "archive.tar", "w", format=tarfile.PAX_FORMAT) as tar:
        for name in names + [f"blobs/sha256/{b}" for b in sorted(os.listdir(blobs))]:
            info = tar.gettarinfo(str(directory / name), arcname=name)
            info.uid = info.gid = info.mtime = 0
            info.uname = info.gname = ""
            if info.isreg():
                with (directory / name).open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    record = {
        "ref": ref,
        "digest": manifest_desc["digest"],
        "size_bytes": sum(layer.size for layer in layers),
        "layers": [
            {"digest": x.digest, "size": x.size, "created_by": x.created_by} for x in layers
        ],
    }
    (directory / "image.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


# --- the cache --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One cache entry: ``kind-key`` is built by ``build(dir)``; ``key`` hashes every input."""

    kind: str
    key: str
    build: Callable[[Path], None]


@dataclass
class Cache:
    """Entries ``<root>/<kind>-<key>``, built in ``<kind>-<key>.partial`` and then renamed; an
    entry is complete when it holds ``.complete`` and ``.build-seconds``."""

    root: Path
    built_s: float = 0.0  # time spent building, outermost entries only
    _depth: int = 0

    def get(self, step: Step) -> Path:
        """The complete entry of ``step``, built now unless cached."""
        final = self.root / f"{step.kind}-{step.key}"
        if (final / ".complete").exists():
            (final / ".complete").touch()  # last used: what prune() keeps
            if self._depth == 0:
                built_s = (final / ".build-seconds").read_text()
                log(f"{step.kind}: cached in {final} (built in {built_s} s)")
            return final
        partial = final.with_name(final.name + ".partial")
        log(f"{step.kind}: building into {final}")
        start = time.monotonic()
        remove_tree(partial)
        partial.mkdir(parents=True)
        self._depth += 1
        try:
            step.build(partial)
        finally:
            self._depth -= 1
            unmount_under(partial)
        seconds = time.monotonic() - start
        (partial / ".build-seconds").write_text(f"{seconds:.1f}")
        (partial / ".complete").touch()
        remove_tree(final)
        partial.rename(final)
        self.built_s += seconds if self._depth == 0 else 0.0
        log(f"{step.kind}: built in {seconds:.1f} s")
        return final


def recipe(*functions: Callable[..., Any]) -> list[str]:
    """The source of the functions that make an entry, and of the layer and image writers:
    part of every key, so a changed recipe rebuilds."""
    sources: list[Callable[..., Any]] = [*functions, tree_entries, write_layer, write_image]
    return [inspect.getsource(f) for f in sources]


@dataclass(frozen=True)
class Image:
    """A buildable image: its ref, its layers (steps writing ``layer.tar``) and its config."""

    name: str
    tag: str | None  # None: the first 12 digits of the key
    layers: tuple[Step, ...]
    config: dict[str, Any]

    @property
    def key(self) -> str:
        return key_of(recipe(image_step), self.name, [s.key for s in self.layers], self.config)

    @property
    def ref(self) -> str:
        return f"{REF_PREFIX}/{self.name}:{self.tag or self.key[:12]}"


def image_step(cache: Cache, image: Image) -> Step:
    """The step that writes ``image``'s layout and archive from its layers."""

    ref, key = image.ref, image.key

    def build(out: Path) -> None:
        layers = [Layer.load(cache.get(step)) for step in image.layers]
        write_image(out, ref, layers, image.config)

    return Step(f"image-{image.name}", key, build)


def image_record(cache: Cache, image: Image) -> dict[str, Any]:
    """``image``'s entry in images.json, building what the cache lacks."""
    directory = cache.get(image_step(cache, image))
    record = json.loads((directory / "image.json").read_text())
    return {
        "ref": record["ref"],
        "archive": str(directory / "archive.tar"),
        "layout": str(directory),
        "digest": record["digest"],
        "size_bytes": record["size_bytes"],
    }


# --- pause and busybox ------------------------------------------------------------------------

# After Kubernetes' build/pause/linux/pause.c: PID 1 of every pod sandbox.
PAUSE_C = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void sigdown(int signo) {
  psignal(signo, "Shutting down, got signal");
  exit(0);
}

static void sigreap(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  if (getpid() != 1) fprintf(stderr, "Warning: pause should be the first process\n");
  struct sigaction down = {.sa_handler = sigdown};
  struct sigaction reap = {.sa_handler = sigreap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &down, NULL) < 0) return 1;
  if (sigaction(SIGTERM, &down, NULL) < 0) return 2;
  if (sigaction(SIGCHLD, &reap, NULL) < 0) return 3;
  for (;;) pause();
  fprintf(stderr, "Error: infinite loop terminated\n");
  return 42;
}
"""


def compile_pause(out: Path) -> Path:
    """``gcc -Os -static``, stripped: ``out/pause``."""
    (out / "pause.c").write_text(PAUSE_C)
    run("gcc", "-Os", "-static", "-s", "-o", out / "pause", out / "pause.c")
    return out / "pause"


def pause_layer() -> Step:
    """/pause, static."""
    toolchain = run("gcc", "--version").splitlines()[0] + run("dpkg-query", "-W", "libc6-dev")

    def build(out: Path) -> None:
        tree = out / "tree"
        tree.mkdir()
        compile_pause(out).rename(tree / "pause")
        write_layer(out, tree, "pause.c: gcc -Os -static -s")
        shutil.rmtree(tree)

    return Step(
        "layer-pause", key_of(recipe(pause_layer, compile_pause), PAUSE_C, toolchain), build
    )


def pause_image() -> Image:
    """The pod sandbox, as registry.k8s.io/pause: user 65535, entrypoint /pause."""
    config = {"Env": env_list({"PATH": BASE_PATH}), "User": "65535:65535", "Entrypoint": ["/pause"]}
    return Image("pause", "1", (pause_layer(),), config)


def busybox_layer() -> Step:
    """Debian's busybox-static with one symlink per applet (``busybox --list-full``), root's
    and nobody's passwd lines, /tmp."""
    busybox = Path("/bin/busybox")
    version = run("dpkg-query", "-W", "busybox-static")

    def build(out: Path) -> None:
        tree = out / "tree"
        modes = dict.fromkeys(shlex.split("bin sbin usr/bin usr/sbin etc var proc sys dev"), 0o755)
        for d, mode in {**modes, "root": 0o700, "tmp": 0o1777}.items():
            (tree / d).mkdir(parents=True, exist_ok=True)
            (tree / d).chmod(mode)
        shutil.copy2(busybox, tree / "bin/busybox")
        for applet in run(busybox, "--list-full").split():
            if not (tree / applet).exists():
                (tree / applet).symlink_to("/bin/busybox")
        (tree / "etc/passwd").write_text(
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
        )
        (tree / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
        write_layer(out, tree, f"{busybox} ({version.split()[1]}) and its applet links")
        shutil.rmtree(tree)

    return Step(
        "layer-busybox", key_of(recipe(busybox_layer), version, sha256_file(busybox)), build
    )


def busybox_image() -> Image:
    """busybox, ``sh`` by default."""
    config = {"Env": env_list({"PATH": BASE_PATH}), "Cmd": ["sh"]}
    return Image("busybox", "1", (busybox_layer(),), config)


# --- Debian and Ray ---------------------------------------------------------------------------

# For exec probes in images without wget or curl (KubeRay's own probes use wget).
HTTP_PROBE = '''#!/usr/bin/python3 -I
"""http-probe URL [TEXT]: exit 0 if GET URL answers 2xx within 2 s (and its body holds TEXT)."""
import sys
import urllib.request

if not 2 <= len(sys.argv) <= 3:
    sys.exit(__doc__)
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as response:
        body = response.read().decode(errors="replace")
except Exception as error:  # any failure is "unhealthy"
    sys.exit(f"http-probe: {sys.argv[1]}: {error}")
if len(sys.argv) == 3 and sys.argv[2] not in body:
    sys.exit(f"http-probe: {sys.argv[1]}: no {sys.argv[2]!r} in {body[:200]!r}")
'''

RAY_ENV = {
    "PATH": f"{RAY_VENV}/bin:{BASE_PATH}",
    "HOME": RAY_HOME,
    "LANG": "C.UTF-8",
    "RAY_USAGE_STATS_ENABLED": "0",
}
# rayproject/ray's config, less conda: user 1000 (group 100 from /etc/passwd), /home/ray
RAY_CONFIG: dict[str, Any] = {
    "Env": env_list(RAY_ENV),
    "User": str(RAY_UID),
    "Cmd": ["bash"],
    "WorkingDir": RAY_HOME,
}
# What stands in for python:3.11-slim-bookworm: Debian's python3 with a venv first on PATH
DEBIAN_PYTHON_CONFIG: dict[str, Any] = {
    "Env": env_list({"PATH": f"{SCALER_VENV}/bin:{BASE_PATH}", "LANG": "C.UTF-8"}),
    "Cmd": ["python3"],
}


def rootfs_skip(name: str) -> bool:
    """Left out of the rootfs layer: device nodes (the runtime makes /dev)."""
    return name.startswith("dev/")


def rootfs_layer() -> Step:
    """Debian bookworm, minbase + python3 + python3-venv: the first layer of ray, scaler and
    agent. The tree stays in the cache: it is the lower directory of the later layers."""
    argv = ["debootstrap", "--variant=minbase", "--include=python3,python3-venv", DEBIAN_SUITE]
    version = run("dpkg-query", "-W", "debootstrap")

    def build(out: Path) -> None:
        tree = out / "tree"
        run(*argv, tree, DEBIAN_MIRROR, quiet=True)
        # apt's downloads and lists, logs, the build host's name and resolver: not the image's
        for junk in ("var/lib/apt/lists", "var/cache/apt/archives", "var/log"):
            for p in (tree / junk).rglob("*"):
                if p.is_file() or p.is_symlink():
                    p.unlink()
        for p in [*(tree / "var/cache/apt").glob("*.bin"), tree / "etc/hostname"]:
            p.unlink(missing_ok=True)
        (tree / "etc/resolv.conf").write_text("")
        write_layer(out, tree, " ".join([*argv, DEBIAN_MIRROR]), skip=rootfs_skip)

    key = key_of(recipe(rootfs_layer, rootfs_skip), argv, DEBIAN_MIRROR, version)
    return Step("layer-rootfs", key, build)


# ``pip download`` of wheels for CPython 3.11 on bookworm, by the host's pip
WHEELS_FOR_BOOKWORM = [
    *shlex.split(
        "pip download --disable-pip-version-check --only-binary=:all: --python-version 3.11"
        " --implementation cp --abi cp311 --abi abi3 --abi none"
    ),
    *(f"--platform={p}" for p in MANYLINUX),
]


def ray_wheels() -> Step:
    """:data:`RAY_REQUIREMENT` and its dependencies as wheels for CPython 3.11 on bookworm (host
    pip)."""
    argv = [*WHEELS_FOR_BOOKWORM, RAY_REQUIREMENT]

    def build(out: Path) -> None:
        run(sys.executable, "-m", *argv, "--dest", out / "wheels", quiet=True)

    return Step("wheels-ray", key_of(recipe(ray_wheels), argv), build)


def ray_venv_layer(cache: Cache, rootfs: Step, wheels: Step) -> Step:
    """On the rootfs: user ray (1000:100, HOME /home/ray), its venv with Ray installed offline by
    that user (rayproject/ray's Python belongs to ray too), and /usr/local/bin/http-probe."""
    env = {**RAY_ENV, "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    user = f"{RAY_UID}:{RAY_GID}"

    def build(out: Path) -> None:
        lower = cache.get(rootfs) / "tree"
        wheel_dir = cache.get(wheels) / "wheels"
        with overlay([lower], out / "tree", out / "work", out / "merged") as root:
            useradd = f"useradd --uid {RAY_UID} --gid {RAY_GID} --create-home --home-dir {RAY_HOME}"
            chroot(root, *shlex.split(useradd), "--shell", "/bin/bash", "ray", env=env)
            shutil.copytree(wheel_dir, root / "tmp/wheels")
            chroot(root, "/usr/bin/python3", "-m", "venv", RAY_VENV, user=user, env=env)
            install = shlex.split("pip install --quiet --no-index --find-links /tmp/wheels")
            chroot(root, *install, RAY_REQUIREMENT, user=user, env=env)
            shutil.rmtree(root / "tmp/wheels")
            probe = root / "usr/local/bin/http-probe"
            probe.write_text(HTTP_PROBE)
            probe.chmod(0o755)
            found = chroot(root, "sh", "-c", "ray --version; python --version", user=user, env=env)
            log(f"layer-ray-venv: {'; '.join(found.splitlines())}")
        (out / "merged").rmdir()
        write_layer(
            out,
            out / "tree",
            f"useradd ray; python3 -m venv {RAY_VENV}; "
            f"pip install {RAY_REQUIREMENT}; http-probe",
            overlay_upper=True,
        )

    key = key_of(recipe(ray_venv_layer), rootfs.key, wheels.key, HTTP_PROBE, env, user)
    return Step("layer-ray-venv", key, build)


def ray_layers(cache: Cache) -> tuple[Step, Step]:
    rootfs = rootfs_layer()
    return rootfs, ray_venv_layer(cache, rootfs, ray_wheels())


def ray_image(cache: Cache) -> Image:
    """Ray on Debian's Python 3.11.2: the layers rootfs + venv."""
    return Image("ray", RAY_VERSION, ray_layers(cache), RAY_CONFIG)


# --- the product, from the Dockerfile ---------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One ``FROM ... AS name`` stage: its base image (ARGs expanded) and its instructions."""

    name: str
    base: str
    instructions: tuple[tuple[str, str], ...]


def dockerfile_stages(path: Path) -> dict[str, Stage]:
    """The stages of the Dockerfile ``path``, read with dockerfile-parse."""
    try:
        from dockerfile_parse import DockerfileParser  # type: ignore[import-untyped]  # no stubs
    except ImportError as error:  # the dev extra
        raise SystemExit(f"images.py: {error}: pip install dockerfile-parse") from error
    args: dict[str, str] = {}
    stages: list[tuple[str, str, list[tuple[str, str]]]] = []
    for item in DockerfileParser(path=str(path), env_replace=False).structure:
        instruction, value = item["instruction"], item["value"]
        if instruction == "COMMENT":
            continue
        if instruction == "ARG" and not stages:
            name, _, default = value.partition("=")
            args[name.strip()] = default.strip()
        elif instruction == "FROM":
            words = value.split()
            image = words[0]
            for arg, default in args.items():
                image = image.replace(f"${{{arg}}}", default).replace(f"${arg}", default)
            name = words[2] if len(words) == 3 and words[1].lower() == "as" else str(len(stages))
            stages.append((name, image, []))
        else:
            stages[-1][2].append((instruction, value))
    return {name: Stage(name, base, tuple(body)) for name, base, body in stages}


def exec_form(value: str) -> list[str]:
    """ENTRYPOINT/CMD: the JSON form as is, the shell form under ``/bin/sh -c``."""
    if value.lstrip().startswith("["):
        form = json.loads(value)
        if not isinstance(form, list) or not all(isinstance(x, str) for x in form):
            raise ValueError(f"not a list of strings: {value}")
        return form
    return ["/bin/sh", "-c", value]


def env_pairs(value: str) -> dict[str, str]:
    """ENV's ``k=v k2="v 2"`` form, or the legacy ``k v``."""
    words = shlex.split(value)
    if words and all("=" in w for w in words):
        return dict(w.partition("=")[::2] for w in words)
    key, _, rest = value.strip().partition(" ")
    return {key: rest.strip()}


# What the script does itself for a stage (the content steps); any other instruction is refused.
CONTENT_INSTRUCTIONS = frozenset({"COPY", "RUN"})


def stage_config(stage: Stage, base: dict[str, Any]) -> dict[str, Any]:
    """The config of the image ``stage`` builds on an image with config ``base``, as docker build
    makes it: ENV sets names in place or appends them, USER/WORKDIR/ENTRYPOINT/CMD replace,
    EXPOSE and LABEL add, and an ENTRYPOINT clears an inherited (not this stage's) CMD."""
    config: dict[str, Any] = json.loads(json.dumps(base))
    env = dict(e.partition("=")[::2] for e in config.get("Env", []))
    cmd_set = False
    for instruction, value in stage.instructions:
        if instruction in CONTENT_INSTRUCTIONS or instruction == "ARG":  # ARG: the build's only
            continue
        if "$" in value:
            raise ValueError(
                f"stage {stage.name}: {instruction} {value}: variables are not expanded"
            )
        if instruction == "ENV":
            env.update(env_pairs(value))
        elif instruction == "USER":
            config["User"] = value.strip()
        elif instruction == "WORKDIR":
            config["WorkingDir"] = posixpath.join(config.get("WorkingDir") or "/", value.strip())
        elif instruction == "ENTRYPOINT":
            config["Entrypoint"] = exec_form(value)
            if not cmd_set:
                config.pop("Cmd", None)
        elif instruction == "CMD":
            config["Cmd"] = exec_form(value)
            cmd_set = True
        elif instruction == "EXPOSE":
            ports = config.setdefault("ExposedPorts", {})
            ports.update({p if "/" in p else f"{p}/tcp": {} for p in value.split()})
        elif instruction == "LABEL":
            config.setdefault("Labels", {}).update(env_pairs(value))
        else:
            raise ValueError(f"stage {stage.name}: {instruction} is not supported by e2e/images.py")
    config["Env"] = env_list(env)
    return config


def context_copies(stage: Stage) -> dict[str, str]:
    """``{destination: context path}`` of the stage's COPYs from the build context (not
    ``--from`` another stage); a destination ending in ``/`` or ``.`` takes the source's name."""
    copies: dict[str, str] = {}
    for instruction, value in stage.instructions:
        words = value.split()
        flags = [w for w in words if w.startswith("--")]
        if instruction != "COPY" or any(f.startswith("--from=") for f in flags):
            continue
        *sources, dest = words[len(flags) :]
        for source in sources:
            if dest.endswith(("/", ".")):
                copies[posixpath.join(dest, posixpath.basename(source))] = source
            else:
                copies[dest] = source
    return copies


def build_stage_sources(build: Stage) -> list[str]:
    """The context paths the ``build`` stage COPYs (the inputs of ``pip wheel``)."""
    return list(context_copies(build).values())


def stage_lock(stage: Stage) -> str:
    """The context path of the lock the stage installs (``pip install --require-hashes ... -r
    PATH``, PATH COPYed from the context): read from the Dockerfile, so the real node's images
    install the same lock as ``docker build``."""
    locks = []
    for instruction, value in stage.instructions:
        if instruction != "RUN":
            continue
        command: list[str] = []
        for word in [*shlex.split(value), "&&"]:
            if word not in ("&&", ";"):
                command.append(word)
                continue
            if command[:2] == ["pip", "install"] and "--require-hashes" in command:
                locks.append(command[command.index("-r") + 1])
            command = []
    copies = context_copies(stage)
    if len(locks) != 1 or locks[0] not in copies:
        raise ValueError(f"stage {stage.name}: no one hashed lock COPYed and installed: {locks}")
    return copies[locks[0]]


def product_files(repo: Path, sources: Sequence[str]) -> list[str]:
    """The files below ``sources`` in ``repo``, sorted, without __pycache__ (.dockerignore)."""
    files: list[str] = []
    for source in sources:
        path = repo / source
        if path.is_file():
            files.append(source)
            continue
        for name, p in tree_entries(path):
            if "__pycache__" not in name.split("/") and p.is_file() and not p.is_symlink():
                files.append(f"{source}/{name}")
    return sorted(files)


def product_wheels(repo: Path) -> Step:
    """The ``build`` stage's /wheels: the package's own wheel, built (``--no-deps
    --no-build-isolation``) by the build backend its hashed lock installs into a fresh venv."""
    dockerfile = (repo / "Dockerfile").read_bytes()
    build_stage = dockerfile_stages(repo / "Dockerfile")["build"]
    files = product_files(repo, build_stage_sources(build_stage))
    lock = stage_lock(build_stage)
    digests = [(name, sha256_file(repo / name)) for name in files]

    def build(out: Path) -> None:
        src = out / "src"
        for name in files:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo / name, src / name)
        run(sys.executable, "-m", "venv", out / "venv")
        pip: list[str | Path] = [out / "venv/bin/pip", "--quiet", "--disable-pip-version-check"]
        run(*pip, "install", "--require-hashes", "--no-deps", "-r", src / lock, quiet=True)
        wheel: list[str | Path] = [
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            out / "wheels",
        ]
        run(*pip, *wheel, src, quiet=True)
        shutil.rmtree(src)
        shutil.rmtree(out / "venv")

    return Step("wheels-product", key_of(recipe(product_wheels), dockerfile, digests), build)


def lock_wheels(lock: Path) -> Step:
    """The wheels a hashed lock pins, for CPython 3.11 on bookworm: host pip checks each hash
    here, the stage's pip again when it installs them offline."""
    argv = [*WHEELS_FOR_BOOKWORM, "--require-hashes", "--no-deps", "-r"]
    text = lock.read_bytes()

    def build(out: Path) -> None:
        (out / "lock.txt").write_bytes(text)
        run(sys.executable, "-m", *argv, out / "lock.txt", "--dest", out / "wheels", quiet=True)

    return Step(f"wheels-lock-{lock.stem}", key_of(recipe(lock_wheels), argv, text), build)


def product_layer(
    cache: Cache,
    name: str,
    lowers: Sequence[Step],
    locked: Step,
    wheels: Step,
    base: StandIn,
    env: dict[str, str],
) -> Step:
    """On ``lowers`` (top first), as the stage's RUN: ``pip install --require-hashes --no-deps``
    of the ``locked`` wheels, then ``--no-deps`` of the package's wheel, into ``base.venv`` as
    ``base.user`` with the stage's ``env`` (a new venv first if ``base.fresh_venv``); ``pip
    check`` then proves the lock and the base's packages agree."""
    venv, user = base.venv, base.user

    def build(out: Path) -> None:
        trees = [cache.get(step) / "tree" for step in lowers]
        lock_dir, wheel_dir = cache.get(locked), cache.get(wheels) / "wheels"
        with overlay(trees, out / "tree", out / "work", out / "merged") as root:
            shutil.copytree(lock_dir, root / "tmp/deps")
            shutil.copytree(wheel_dir, root / "tmp/wheels")
            if base.fresh_venv:
                chroot(root, "/usr/bin/python3", "-m", "venv", venv, user=user, env=env)
            pip = f"{venv}/bin/pip install --quiet --no-index --no-deps"
            locked_install = f"{pip} --require-hashes --find-links /tmp/deps/wheels"
            chroot(
                root, *shlex.split(locked_install), "-r", "/tmp/deps/lock.txt", user=user, env=env
            )
            package = [f"/tmp/wheels/{p.name}" for p in sorted(wheel_dir.glob("*.whl"))]
            chroot(root, *shlex.split(pip), *package, user=user, env=env)
            shutil.rmtree(root / "tmp/deps")
            shutil.rmtree(root / "tmp/wheels")
            chroot(root, f"{venv}/bin/pip", "check", user=user, env=env)
            chroot(root, "keda-ray-scaler", "--help", user=user, env=env)
        (out / "merged").rmdir()
        created_by = f"pip install --require-hashes {locked.kind}; keda-ray-scaler into {venv}"
        write_layer(out, out / "tree", created_by, overlay_upper=True)
        remove_tree(out / "tree")  # nothing stands on it

    key = key_of(
        recipe(product_layer),
        name,
        [s.key for s in lowers],
        locked.key,
        wheels.key,
        [venv, user, base.fresh_venv],
        env,
    )
    return Step(f"layer-{name}", key, build)


@dataclass(frozen=True)
class StandIn:
    """What replaces one of the Dockerfile's base images here."""

    image: str  # "rootfs": the Debian layer alone
    config: dict[str, Any]  # the config the stage starts from
    venv: str  # where the stage's ``pip install`` goes
    user: str  # who runs the stage's RUN: the base image's USER
    fresh_venv: bool  # make the venv first


STAND_INS = {
    "python:3.11-slim-bookworm": StandIn("rootfs", DEBIAN_PYTHON_CONFIG, SCALER_VENV, "0:0", True),
}
#: One image, both commands: the agent runs from the scaler's image (no Ray inside).
PRODUCT_STAGES = {"keda-ray-scaler": "scaler"}


def base_ref(image: str) -> str:
    """``repository:tag`` of a FROM image, its ``@sha256:`` digest left out: the stand-ins are
    chosen by tag (a digest names content that cannot be pulled here)."""
    return image.partition("@")[0]


def product_configs(dockerfile: Path) -> dict[str, tuple[StandIn, dict[str, Any]]]:
    """For each product image: the stand-in for its stage's base, and its config."""
    stages = dockerfile_stages(dockerfile)
    configs = {}
    for name, stage_name in PRODUCT_STAGES.items():
        stage = stages[stage_name]
        base = STAND_INS.get(base_ref(stage.base))
        if base is None:
            raise ValueError(f"stage {stage_name}: no stand-in for FROM {stage.base} in images.py")
        configs[name] = (base, stage_config(stage, base.config))
    return configs


def product_images(cache: Cache, repo: Path) -> dict[str, Image]:
    """keda-ray-scaler (stage ``scaler``): the stand-in's layers, then the product installed as
    the stage says."""
    lowers = {"rootfs": (rootfs_layer(),)}  # top first
    wheels = product_wheels(repo)
    stages = dockerfile_stages(repo / "Dockerfile")
    images = {}
    for name, (base, config) in product_configs(repo / "Dockerfile").items():
        env = dict(e.partition("=")[::2] for e in config["Env"])
        below = lowers[base.image]
        locked = lock_wheels(repo / stage_lock(stages[PRODUCT_STAGES[name]]))
        layer = product_layer(cache, name, below, locked, wheels, base, env)
        images[name] = Image(name, None, (*reversed(below), layer), config)
    return images


# --- the command ------------------------------------------------------------------------------


def images_of(names: Sequence[str], cache: Cache, repo: Path) -> list[Image]:
    """The recipes of ``names``, in that order."""
    found: dict[str, Image] = {}
    for name in names:
        if name == "pause":
            found[name] = pause_image()
        elif name == "busybox":
            found[name] = busybox_image()
        elif name == "ray":
            found[name] = ray_image(cache)
        else:
            found.update(product_images(cache, repo))
    return [found[name] for name in names]


def main(argv: Sequence[str] | None = None) -> int:
    default_cache = os.environ.get("KRS_E2E_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "keda-ray-scaler/e2e"
    )
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path(default_cache))
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"default: all of {NAMES}")
    args = parser.parse_args(argv)
    if unknown := set(args.names) - set(NAMES):
        parser.error(f"unknown image {sorted(unknown)}; choose from {NAMES}")
    names = list(dict.fromkeys(args.names)) or list(NAMES)
    cache = Cache(args.cache.expanduser().resolve())
    cache.root.mkdir(parents=True, exist_ok=True)
    # SIGTERM unwinds like Ctrl-C: the running command is killed and every mount removed
    signal.signal(signal.SIGTERM, lambda signo, frame: sys.exit(128 + signo))
    start = time.monotonic()
    with (cache.root / ".images.lock").open("w") as lock:
        if not _try_lock(lock):
            log("waiting for another images.py on this cache")
            fcntl.flock(lock, fcntl.LOCK_EX)
        images = images_of(names, cache, REPO)
        records = {image.name: image_record(cache, image) for image in images}
        listing = _json_bytes(records)
        out = cache.root / f"images-{key_of(listing)}"
        if not (out / "images.json").exists():
            tmp = Path(tempfile.mkdtemp(prefix="images-", suffix=".partial", dir=cache.root))
            (tmp / "images.json").write_bytes(listing)
            tmp.chmod(0o755)
            remove_tree(out)
            tmp.rename(out)
        prune(cache.root, KEEP)
    log(f"built {cache.built_s:.1f} s of images now; ready in {time.monotonic() - start:.1f} s")
    print(out)
    return 0


def _try_lock(lock: Any) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


ENTRY = re.compile(r"(?P<kind>(image|layer|wheels)-[a-z0-9-]+)-[0-9a-f]{16}")


def prune(root: Path, keep: int, unused_s: float = 3600.0) -> None:
    """Remove the complete entries of each kind but the ``keep`` last used ones and those used
    in the last ``unused_s`` (every edit of the package makes ~0.5 GB of product entries), and
    the listings that named a removed one."""
    kinds: dict[str, list[Path]] = {}
    for entry in root.iterdir():
        if (match := ENTRY.fullmatch(entry.name)) and (entry / ".complete").exists():
            kinds.setdefault(match["kind"], []).append(entry)
    for entries in kinds.values():
        entries.sort(key=lambda e: (e / ".complete").stat().st_mtime, reverse=True)
        for entry in entries[keep:]:
            if time.time() - (entry / ".complete").stat().st_mtime < unused_s:
                continue
            log(f"prune: {entry.name}")
            remove_tree(entry)
    for listing in root.glob("images-*/images.json"):
        records = json.loads(listing.read_text())
        if not all(Path(r["archive"]).exists() for r in records.values()):
            remove_tree(listing.parent)


if __name__ == "__main__":
    sys.exit(main())
