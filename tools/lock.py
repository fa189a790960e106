"""Refresh what the images are built from: the hashed lock files and the base images' digests.

    python tools/lock.py [--locks-only]          (make lock)

Locks (``uv pip compile --generate-hashes``, for CPython 3.11 on x86_64 Linux; each pin carries
the hashes of every file of its version, so pip picks the right wheel on the image and checks it):

  locks/build.txt    the build backend (pyproject's [build-system] requires): the build stage
  locks/scaler.txt   the package's runtime dependencies: the scaler image
  locks/agent.txt    the same less what ``ray[default]`` brings at the Ray image's version (read
                     from the Dockerfile's RAY_IMAGE tag): the agent image, whose Ray and Ray's
                     dependencies are the base image's own; the excluded names close the file

The scaler's and the agent's pins come from one resolution of the package together with
``ray[default]``, so both images run the same versions of what they share, versions Ray accepts.
Versions are those with wheels for glibc 2.28 or later (the Debian bookworm and Ubuntu bases both
run them): no sdist is ever built inside an image.

Digests: each ``ARG <NAME>_IMAGE=<repo>:<tag>[@sha256:...]`` default in the Dockerfile is set to
the digest its repo:tag has now, from ``crane digest``, ``skopeo inspect --raw`` or ``docker buildx
imagetools inspect`` (the first one found), and the Dockerfile's "Base image digests:" line says
when. Without any of the three it stops before changing anything (``--locks-only`` skips them).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"
LOCKS = REPO / "locks"
# The images' Python; manylinux_2_28: versions that have wheels for both bases' glibc (2.35, 2.36)
TARGET = ["--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28"]
IMAGE_ARG = re.compile(r"^ARG (?P<name>\w+_IMAGE)=(?P<ref>[^@\s]+)(@sha256:[0-9a-f]{64})?$", re.M)
DIGEST_LINE = re.compile(r"^# Base image digests:.*$", re.M)
HEADER = """\
# {what}
# A hashed lock for CPython 3.11 on x86_64 Linux, installed with `pip install --require-hashes
# --no-deps -r` (see the Dockerfile). Do not edit: `make lock` (tools/lock.py) rewrites it.
"""


def fail(message: str) -> None:
    """One line on stderr, exit 1."""
    sys.exit(f"lock.py: {message}")


def uv(*argv: str | Path) -> str:
    """``uv pip compile`` with the images' target; its stdout."""
    command = [str(Path(sys.executable).parent / "uv"), "pip", "compile", "--quiet", *TARGET]
    command += ["--only-binary", ":all:", "--custom-compile-command", "make lock"]
    done = subprocess.run(
        [*command, *map(str, argv)], cwd=REPO, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        fail(f"uv pip compile failed: {done.stderr.strip()}")
    return done.stdout


def pins(text: str) -> list[str]:
    """The names pinned by a requirements file (``name==version``)."""
    return re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", text, re.M)


def ray_version(dockerfile: str) -> str:
    """The Ray version of the Dockerfile's RAY_IMAGE default (``rayproject/ray:2.60.0-py311``)."""
    refs = {m["name"]: m["ref"] for m in IMAGE_ARG.finditer(dockerfile)}
    found = re.search(r":(\d+\.\d+\.\d+)", refs.get("RAY_IMAGE", ""))
    if not found:
        fail("no ARG RAY_IMAGE=rayproject/ray:<version>-py311 in the Dockerfile")
    return found[1] if found else ""


def write_locks(dockerfile: str) -> None:
    """locks/build.txt, locks/scaler.txt and locks/agent.txt, from one resolution with Ray."""
    ray = f"ray[default]=={ray_version(dockerfile)}"
    build = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    with tempfile.TemporaryDirectory(prefix="lock-") as tmp:
        ray_in, build_in = Path(tmp, "ray.in"), Path(tmp, "build-system.in")
        ray_in.write_text(ray + "\n")
        build_in.write_text("\n".join(build) + "\n")
        # both images' pins: the package and Ray resolved together
        joint = Path(tmp, f"with-{ray.replace('[default]==', '-')}.txt")
        joint.write_text(uv("pyproject.toml", ray_in, "--no-header", "--no-annotate"))
        with_ray: list[str | Path] = ["-c", joint]
        ray_brings = pins(uv(ray_in, *with_ray, "--no-header", "--no-annotate"))
        excluded = [a for name in ray_brings for a in ("--no-emit-package", name)]
        project, hashed = "pyproject.toml", ("--generate-hashes", "--no-header")
        outputs = {
            "build.txt": ("The build stage's build backend.", uv(build_in, *hashed)),
            "scaler.txt": ("The scaler image's dependencies.", uv(project, *with_ray, *hashed)),
            "agent.txt": (
                f"The agent image's dependencies less what its base brings ({ray}).",
                uv(project, *with_ray, *excluded, *hashed),
            ),
        }
        LOCKS.mkdir(exist_ok=True)
        for name, (what, text) in outputs.items():
            text = text.replace(f"{tmp}/", "")  # constraint annotations name the file alone
            (LOCKS / name).write_text(HEADER.format(what=what) + text)
            print(f"lock.py: locks/{name}: {len(pins(text))} pins", file=sys.stderr)


def digest_tool() -> tuple[str, ...] | None:
    """The first of crane, skopeo or docker buildx present here."""
    if shutil.which("crane"):
        return ("crane",)
    if shutil.which("skopeo"):
        return ("skopeo",)
    buildx = ["docker", "buildx", "version"]
    if shutil.which("docker") and not subprocess.run(buildx, capture_output=True).returncode:
        return ("docker", "buildx")
    return None


def resolve(tool: tuple[str, ...], ref: str) -> str:
    """``sha256:<hex>`` of the manifest (or index) ``ref`` names in its registry now."""
    argv = {
        "crane": ["crane", "digest", ref],
        "skopeo": ["skopeo", "inspect", "--raw", f"docker://{ref}"],
        "docker": [
            "docker",
            "buildx",
            "imagetools",
            "inspect",
            "--format",
            "{{json .Manifest}}",
            ref,
        ],
    }[tool[0]]
    done = subprocess.run(argv, capture_output=True, check=False)
    if done.returncode != 0:
        fail(f"{' '.join(argv)}: {done.stderr.decode(errors='replace').strip()}")
    if tool[0] == "skopeo":  # the raw manifest's bytes: their hash is the digest
        return f"sha256:{hashlib.sha256(done.stdout).hexdigest()}"
    out = done.stdout.decode().strip()
    digest = json.loads(out)["digest"] if tool[0] == "docker" else out
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        fail(f"{' '.join(argv)}: not a digest: {digest!r}")
    return str(digest)


def pin_bases(dockerfile: str, tool: tuple[str, ...]) -> str:
    """The Dockerfile with every ``ARG *_IMAGE`` default pinned to its digest of today."""
    for match in IMAGE_ARG.finditer(dockerfile):
        digest = resolve(tool, match["ref"])
        print(f"lock.py: {match['ref']}@{digest}", file=sys.stderr)
        dockerfile = dockerfile.replace(match[0], f"ARG {match['name']}={match['ref']}@{digest}")
    today = datetime.date.today().isoformat()
    line = f"# Base image digests: resolved {today} by `make lock` ({' '.join(tool)})."
    return DIGEST_LINE.sub(line, dockerfile, count=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--locks-only", action="store_true", help="leave the digests as they are")
    args = parser.parse_args()
    dockerfile = DOCKERFILE.read_text()
    tool = None if args.locks_only else digest_tool()
    if tool is None and not args.locks_only:
        why = "no crane, skopeo or docker buildx to resolve the base images' digests"
        fail(f"{why} (--locks-only refreshes the locks alone)")
    write_locks(dockerfile)
    if tool is not None:
        DOCKERFILE.write_text(pin_bases(dockerfile, tool))


if __name__ == "__main__":
    main()
