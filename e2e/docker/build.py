"""``docker build`` of the shipped Dockerfile, as a user runs it, on the bed's own Docker Engine;
then the image's size and start-up times.

    python e2e/docker/build.py [--tag TAG] [--figures FILE] [--keep-engine] [--once]   (needs root)

Run on the host, it prepares what the build cannot fetch (below, needs the network unless cached),
then runs itself again under ``e2e/netns.sh``; run inside a private network namespace, it uses the
cache alone. Inside: ``e2e/docker/engine.sh start`` (stopped again unless it was running, or
``--keep-engine``), the base image imported, then, with ``DOCKER_BUILDKIT=0``::

    docker build --network host --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm \\
      --build-arg PIP_INDEX_URL=http://127.0.0.1:<port>/simple -t TAG .

of a copy of the context (what .dockerignore admits, so that edits made meanwhile do not reach
it): once with ``--no-cache`` (cold), once again (warm: nothing changed), once after a one-line
edit of the package (tagged ``TAG-edit``, then removed); dangling images are pruned. Then ``docker
run --rm TAG --help``, a bare container (``--entrypoint true``), and ``serve`` (read-only root,
tmpfs /tmp, as the chart runs it) until its plaintext health port answers SERVING, three times
each, and ``agent --help`` once. ``--once`` (``make e2e``): one build, with the cache, and no
figures but its seconds; ``--prepare``: the inputs alone (on the host, before the namespace).
The figures go to ``--figures`` (JSON; default engine.sh's
directory) and one line ``docker-build: ...`` on stdout, the last.

What differs from a user's build, and why (this machine reaches no registry, and its build
containers no index):
  base image   ``python:3.11-slim-bookworm`` is not pulled: e2e/images.py's Debian bookworm rootfs
               (debootstrap minbase + python3 + python3-venv, the bed's own) with a venv at
               /opt/venv first on PATH (``python`` and ``pip`` there, as the official image has
               them in /usr/local/bin), flattened and ``docker import``-ed under that tag.
  PYTHON_IMAGE the Dockerfile's default is that name ``@sha256:`` the registry's manifest digest.
               Docker 20.10 finds a digest reference only in its reference store, which only a
               pull fills (``docker tag`` refuses a digest, ``docker load`` takes tags only); the
               legacy builder then asks the registry and fails. So the tag is passed alone.
  PIP_INDEX_URL  the Dockerfile's ARG (default PyPI) points at a PEP 503 index of the locks'
               wheels, served here on 127.0.0.1 (``--network host``: the build's RUN containers
               share the namespace); the wheels are e2e/images.py's (host pip, hashes checked),
               and pip checks every hash again inside.
  DOCKER_BUILDKIT=0  the Dockerfile's ``# syntax=docker/dockerfile:1`` makes BuildKit pull its
               frontend image from a registry; the legacy builder ignores the line.
  krs-runc     dockerd's runtime wrapper (engine.sh: this machine lacks CAP_SYS_RESOURCE).

Environment: KRS_E2E_CACHE (e2e/images.py's cache), KRS_DOCKER_DIR (engine.sh's directory).
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import html
import http.server
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from e2e import images  # noqa: E402  (e2e/ is not installed: the repository's root is the path)

HERE = Path(__file__).resolve().parent
DOCKER = "/usr/bin/docker"  # the engine's own client (20.10); a newer one on PATH wants buildx
INDEX_PORT = 3141  # fixed, so the build args and hence the build cache are the same every run
RUNS = 3
DOCKER_ENV = {"DOCKER_BUILDKIT": "0"}


def log(message: str) -> None:
    print(f"build.py: {message}", file=sys.stderr, flush=True)


def base_tag(dockerfile: Path) -> str:
    """The Dockerfile's PYTHON_IMAGE default without its digest: the name the import takes."""
    found = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile.read_text(), re.M)
    if found is None:
        raise ValueError(f"{dockerfile}: no ARG PYTHON_IMAGE=...")
    return images.base_ref(found[1])


# --- the inputs: built on the host, cached in e2e/images.py's cache --------------------------


def base_layer(cache: images.Cache) -> images.Step:
    """The stand-in for python:3.11-slim-bookworm as one flattened layer: e2e/images.py's rootfs
    with a venv at /opt/venv (Debian's python3 -m venv: python, pip)."""
    rootfs = images.rootfs_layer()
    venv = images.SCALER_VENV

    def build(out: Path) -> None:
        lower = cache.get(rootfs) / "tree"
        with images.overlay([lower], out / "upper", out / "work", out / "merged") as root:
            images.chroot(root, "/usr/bin/python3", "-m", "venv", venv, env={"LANG": "C.UTF-8"})
        merged = out / "merged"  # again, without the chroot's /proc and /dev
        (out / "work").mkdir()  # overlay() removed it
        options = f"lowerdir={lower},upperdir={out / 'upper'},workdir={out / 'work'}"
        images.run("mount", "-t", "overlay", "overlay", "-o", options, merged)
        try:
            created_by = f"{images.DEBIAN_SUITE} minbase + python3; python3 -m venv {venv}"
            images.write_layer(out, merged, created_by, skip=images.rootfs_skip)
        finally:
            images.unmount_under(merged)
        for name in ("upper", "work", "merged"):
            images.remove_tree(out / name)

    key = images.key_of(images.recipe(base_layer), rootfs.key, venv)
    return images.Step("layer-docker-python", key, build)


def index_step(cache: images.Cache, locks: list[images.Step]) -> images.Step:
    """A PEP 503 index of the locks' wheels: ``simple/<project>/index.html`` linking each wheel
    in ``files/`` (hard links) with its sha256."""

    def build(out: Path) -> None:
        (out / "files").mkdir()
        projects: dict[str, list[str]] = {}
        for step in locks:
            for wheel in sorted((cache.get(step) / "wheels").glob("*.whl")):
                if not (out / "files" / wheel.name).exists():
                    os.link(wheel, out / "files" / wheel.name)
                project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
                projects.setdefault(project, []).append(wheel.name)
        for project, wheels in projects.items():
            links = "".join(anchor(w, out / "files" / w) for w in wheels)
            page = out / "simple" / project / "index.html"
            page.parent.mkdir(parents=True)
            page.write_text(f"<html><body>\n{links}</body></html>\n")
        names = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
        (out / "simple" / "index.html").write_text(f"<html><body>\n{names}</body></html>\n")

    key = images.key_of(images.recipe(index_step), [s.key for s in locks])
    return images.Step("wheels-docker-index", key, build)


def anchor(name: str, path: Path) -> str:
    """A PEP 503 link to ``path``, its sha256 in the fragment (pip checks it)."""
    digest = images.sha256_file(path).replace(":", "=")
    return f'<a href="../../files/{html.escape(name)}#{digest}">{html.escape(name)}</a>\n'


def prepare() -> dict[str, Path]:
    """The base layer and the wheel index, from the cache or built now (the network when cold)."""
    cache = images.Cache(Path(os.environ.get("KRS_E2E_CACHE") or images_cache()).resolve())
    cache.root.mkdir(parents=True, exist_ok=True)
    with (cache.root / ".images.lock").open("w") as lock:
        try:  # one build at a time with e2e/images.py
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for an e2e/images.py on this cache")
            fcntl.flock(lock, fcntl.LOCK_EX)
        locks = [images.lock_wheels(REPO / "locks" / f"{n}.txt") for n in ("build", "scaler")]
        base = cache.get(base_layer(cache))
        index = cache.get(index_step(cache, locks))
    return {"base": base, "index": index}


def images_cache() -> Path:
    home = os.environ.get("KRS_REAL_HOME") or os.environ.get("HOME", "/root")
    return Path(home) / ".cache" / "keda-ray-scaler" / "e2e"


# --- inside the namespace: the engine, the import, the index, the build -----------------------


def docker(*argv: str, quiet: bool = False) -> str:
    return images.run(DOCKER, *argv, env={**os.environ, **DOCKER_ENV}, quiet=quiet)


def engine(command: str) -> str:
    """``engine.sh COMMAND``; its last line of stdout (``DOCKER_HOST=...`` for start and host)."""
    lines = images.run("bash", HERE / "engine.sh", command).strip().splitlines()
    return lines[-1] if lines else ""


def import_base(layer_dir: Path, tag: str, state: Path) -> float | None:
    """``docker import`` the base layer as ``tag`` unless the image there is this layer's import;
    the seconds it took, or None."""
    meta = json.loads((layer_dir / "layer.json").read_text())
    imported = json.loads(state.read_text()) if state.exists() else {}
    current = docker("image", "ls", "-q", "--no-trunc", tag).strip()
    if current and imported.get(meta["digest"]) == current:
        log(f"{tag}: imported already ({current[:19]})")
        return None
    config = images.DEBIAN_PYTHON_CONFIG
    changes = [f"ENV {e}" for e in config["Env"]] + [f"CMD {json.dumps(config['Cmd'])}"]
    start = time.monotonic()
    image_id = docker(
        "import", *(f"--change={c}" for c in changes), str(layer_dir / "layer.tar"), tag
    ).strip()
    seconds = time.monotonic() - start
    state.write_text(json.dumps({meta["digest"]: image_id}) + "\n")
    log(f"{tag}: imported in {seconds:.1f} s ({image_id[:19]})")
    return seconds


@contextmanager
def serve_index(root: Path) -> Iterator[str]:
    """An HTTP server of ``root`` on 127.0.0.1 (INDEX_PORT, or any port if taken): its URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(root))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", INDEX_PORT), handler)
    except OSError:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def snapshot(repo: Path, out: Path) -> Path:
    """``out``: the build context as ``.dockerignore`` admits it (its ``!PATH`` lines after
    ``*``), with the Dockerfile and .dockerignore: what ``docker build`` of ``repo`` sends, held
    still while other work edits the tree between the builds."""
    rules = [r.strip() for r in (repo / ".dockerignore").read_text().splitlines()]
    rules = [r for r in rules if r and not r.startswith("#")]
    if rules[:1] != ["*"]:
        raise ValueError(f"{repo}/.dockerignore: expected '*' then '!PATH' lines")
    images.remove_tree(out)
    out.mkdir(parents=True)
    for name in ["Dockerfile", ".dockerignore", *(r[1:].rstrip("/") for r in rules if r[0] == "!")]:
        if (repo / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(repo / name, out / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(repo / name, out / name)
    return out


def build(
    tag: str, base: str, index_url: str, context: Path, *, no_cache: bool, logfile: Path
) -> float:
    """``docker build`` of ``context``; the seconds it took."""
    argv = ["build", "--network", "host", "--build-arg", f"PYTHON_IMAGE={base}"]
    argv += ["--build-arg", f"PIP_INDEX_URL={index_url}", "-t", tag, str(context)]
    argv += ["--no-cache"] if no_cache else []
    log(f"DOCKER_BUILDKIT=0 docker {shlex.join(argv)}  (log: {logfile})")
    start = time.monotonic()
    with logfile.open("w") as out:
        proc = subprocess.run(
            [DOCKER, *argv], env={**os.environ, **DOCKER_ENV}, stdout=out, stderr=subprocess.STDOUT
        )
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.stderr.write(logfile.read_text()[-3000:])
        raise RuntimeError(f"docker build exited {proc.returncode}")
    return seconds


def step_counts(logfile: Path) -> tuple[str, int]:
    """A legacy build's log: ``cached/steps`` (``---> Using cache``, ``Step N/M``), and how many
    steps ran a container (``---> Running in``)."""
    text = logfile.read_text()
    steps = re.findall(r"^Step \d+/(\d+) :", text, re.M)
    cached = f"{text.count('---> Using cache')}/{steps[-1] if steps else 0}"
    return cached, text.count("---> Running in")


# --- the figures ----------------------------------------------------------------------------


def timed(*argv: str) -> float:
    start = time.monotonic()
    docker(*argv, quiet=True)
    return time.monotonic() - start


def serve_ready_s(tag: str) -> float:
    """``docker run -d`` of ``serve`` (read-only root, tmpfs /tmp) to SERVING on its plaintext
    health port, as the kubelet's gRPC probe asks it."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    args = ["serve", "--health-port", "9091", "--prometheus-url", "http://127.0.0.1:9"]
    start = time.monotonic()
    cid = docker("run", "-d", "--read-only", "--tmpfs", "/tmp", tag, *args).strip()
    try:
        ip = docker("inspect", "-f", "{{.NetworkSettings.IPAddress}}", cid).strip()
        request = health_pb2.HealthCheckRequest(service="")
        while time.monotonic() - start < 60:
            with grpc.insecure_channel(f"{ip}:9091") as channel:
                try:
                    reply = health_pb2_grpc.HealthStub(channel).Check(request, timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return time.monotonic() - start
                except grpc.RpcError:
                    pass
            time.sleep(0.02)
        raise RuntimeError(f"serve not SERVING in 60 s: {docker('logs', cid)[-2000:]}")
    finally:
        docker("rm", "-f", cid, quiet=True)


def measure(tag: str, base: str) -> dict[str, Any]:
    """Size, ``--help``, ``agent --help``, a bare container, and serve's readiness."""
    size = int(docker("image", "inspect", "-f", "{{.Size}}", tag))
    base_size = int(docker("image", "inspect", "-f", "{{.Size}}", base))
    agent_help = docker("run", "--rm", tag, "agent", "--help", quiet=True)
    assert "usage: keda-ray-scaler agent" in agent_help, agent_help[:500]
    return {
        "image_bytes": size,
        "base_bytes": base_size,
        "user": docker("image", "inspect", "-f", "{{.Config.User}}", tag).strip(),
        "true_s": [timed("run", "--rm", "--entrypoint", "true", tag) for _ in range(RUNS)],
        "help_s": [timed("run", "--rm", tag, "--help") for _ in range(RUNS)],
        "serve_ready_s": [serve_ready_s(tag) for _ in range(RUNS)],
    }


def summary(f: dict[str, Any]) -> str:
    mb = 1e6
    product = (f["image_bytes"] - f["base_bytes"]) / mb
    med = statistics.median
    return (
        f"docker-build: image {f['image_bytes'] / mb:.0f} MB (base {f['base_bytes'] / mb:.0f}"
        f" + {product:.0f} MB), build cold {f['build_cold_s']:.1f} s warm"
        f" {f['build_warm_s']:.1f} s after an edit {f['build_edit_s']:.1f} s,"
        f" docker run: --help {med(f['help_s']):.2f} s"
        f" (bare container {med(f['true_s']):.2f} s), serve SERVING {med(f['serve_ready_s']):.2f} s"
    )


def builds(tag: str, base: str, url: str, context: Path, logs: Path) -> dict[str, Any]:
    """Cold (``--no-cache``), warm (nothing changed), and after a one-line edit of the package
    (tagged ``<tag>-edit``, removed after): their seconds, and the cold and warm cache hits."""
    logs.mkdir(exist_ok=True)
    figures: dict[str, Any] = {}
    for kind in ("cold", "warm", "edit"):
        if kind == "edit":
            with (context / "keda_ray_scaler" / "__init__.py").open("a") as f:
                f.write("# edited\n")
        logfile = logs / f"{kind}.log"
        into = f"{tag}-edit" if kind == "edit" else tag
        figures[f"build_{kind}_s"] = build(
            into, base, url, context, no_cache=kind == "cold", logfile=logfile
        )
        figures[f"build_{kind}_cached"], figures[f"build_{kind}_ran"] = step_counts(logfile)
    docker("rmi", f"{tag}-edit", quiet=True)
    docker("image", "prune", "--force", quiet=True)  # earlier runs' images, the build stage's
    return figures


def state_dir() -> Path:
    """engine.sh's directory: where its socket is."""
    return Path(engine("host").partition("unix://")[2]).parent


def engine_running(directory: Path) -> bool:
    try:
        os.kill(int((directory / "dockerd.pid").read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def inside(args: argparse.Namespace, inputs: dict[str, Path]) -> dict[str, Any]:
    """Engine up, base imported, the builds, the figures; the engine stopped unless kept."""
    directory = state_dir()
    was_running = engine_running(directory)
    start = time.monotonic()
    os.environ["DOCKER_HOST"] = engine("start").partition("=")[2]
    figures: dict[str, Any] = {"engine_start_s": time.monotonic() - start}
    try:
        figures["docker_version"] = docker("version", "-f", "{{.Server.Version}}").strip()
        base = base_tag(REPO / "Dockerfile")
        figures["base_import_s"] = import_base(inputs["base"], base, directory / "base.json")
        context = snapshot(REPO, directory / "context")
        with serve_index(inputs["index"]) as url:
            if args.once:
                (directory / "build-logs").mkdir(exist_ok=True)
                logfile = directory / "build-logs" / "once.log"
                figures["build_s"] = build(
                    args.tag, base, url, context, no_cache=False, logfile=logfile
                )
                return figures
            figures.update(builds(args.tag, base, url, context, directory / "build-logs"))
        figures.update(measure(args.tag, base))
    finally:
        if not (was_running or args.keep_engine):
            engine("stop")
    return figures


def route_out() -> bool:
    """A default route in this network namespace (as engine.sh's ``route_out``): the host's."""
    v4 = Path("/proc/net/route").read_text().splitlines()[1:]
    if any(r.split()[1] == r.split()[7] == "00000000" for r in v4):
        return True
    v6 = [r.split() for r in Path("/proc/net/ipv6_route").read_text().splitlines()]
    return any(r[0] == "0" * 32 and r[1] == "00" and not int(r[8], 16) & 0x200 for r in v6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--tag", default="keda-ray-scaler:local")
    parser.add_argument("--figures", type=Path, help="default: engine.sh's directory/figures.json")
    parser.add_argument("--keep-engine", action="store_true", help="leave dockerd running")
    parser.add_argument("--once", action="store_true", help="one build with the cache, no figures")
    parser.add_argument("--prepare", action="store_true", help="only the inputs (host, network)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    if args.prepare:
        prepare()
        return 0
    if route_out():
        images.run("bash", HERE / "engine.sh", "install")
        prepare()
        log(f"inputs ready in {time.monotonic() - start:.1f} s; on under e2e/netns.sh")
        netns = REPO / "e2e" / "netns.sh"
        again = [sys.executable, __file__, *(sys.argv[1:] if argv is None else argv)]
        return subprocess.run(["bash", netns, *again], check=False).returncode
    inputs = prepare()
    figures = {"inputs_s": time.monotonic() - start, **inside(args, inputs)}
    if args.once:
        print(f"docker-build: {args.tag} in {figures['build_s']:.1f} s")
        return 0
    out = args.figures or state_dir() / "figures.json"
    out.write_text(json.dumps(figures, indent=1) + "\n")
    log(f"figures: {out}")
    print(summary(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
