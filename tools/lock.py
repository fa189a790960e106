"""Refresh what the images are built from: the hashed lock files and the base images' digests.

    python tools/lock.py [--locks-only]          (make lock)

Locks (``uv pip compile --generate-hashes``, for CPython 3.11 on x86_64 Linux; each pin carries
the hashes of every file of its version, so pip picks the right wheel on the image and checks it):

  locks/build.txt    the build backend (pyproject's [build-system] requires): the build stage
  locks/scaler.txt   the package's runtime dependencies: the one image, whose two commands are
                     the scaler (``serve``) and the agent (``agent``; no Ray: it speaks to
                     Ray's GCS over gRPC)

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


def write_locks() -> None:
    """locks/build.txt and locks/scaler.txt."""
    build = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    with tempfile.TemporaryDirectory(prefix="lock-") as tmp:
        build_in = Path(tmp, "build-system.in")
        build_in.write_text("\n".join(build) + "\n")
        hashed = ("--generate-hashes", "--no-header")
        outputs = {
            "build.txt": ("The build stage's build backend.", uv(build_in, *hashed)),
            "scaler.txt": (
                "The image's dependencies (both commands: serve and agent).",
                uv("pyproject.toml", *hashed),
            ),
        }
        LOCKS.mkdir(exist_ok=True)
        for name, (what, text) in outputs.items():
            text = text.replace(f"{tmp}/", "")  # annotations name the file alone
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
    write_locks()
    if tool is not None:
        DOCKERFILE.write_text(pin_bases(dockerfile, tool))


if __name__ == "__main__":
    main()
