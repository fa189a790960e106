"""The docs follow the code: the CLI page is generated, links resolve, the README stays short."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from keda_ray_scaler.cli import docgen
from tools import archmap, codemap

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted([README, *DOCS.rglob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown page (fenced code skipped)."""
    out: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_the_cli_reference_is_generated_from_the_current_argparse_definitions() -> None:
    """docs/reference/cli.md is what the generator prints now (regenerate it when this fails)."""
    committed = (DOCS / "reference" / "cli.md").read_text()
    assert committed == docgen.render(), (
        "stale: python -m keda_ray_scaler.cli.docgen > docs/reference/cli.md"
    )


def test_the_code_map_is_generated_from_the_module_tree() -> None:
    """architecture.md's code map is what tools/codemap.py renders now (run it when this fails)."""
    page = (DOCS / "concepts" / "architecture.md").read_text()
    assert codemap.current(page) == codemap.render(), "stale: python tools/codemap.py"


def test_the_code_map_names_every_module_and_no_other() -> None:
    """Every .py under keda_ray_scaler/ but rpc/_generated has a row; every row is a module."""
    page = (DOCS / "concepts" / "architecture.md").read_text()
    rows = set(re.findall(r"^\| `([^`]+)` \|", codemap.current(page), re.M))
    package = ROOT / "keda_ray_scaler"
    tree = {
        p.relative_to(package).as_posix().removesuffix("__init__.py") or "keda_ray_scaler/"
        for p in package.rglob("*.py")
        if "_generated" not in p.parts
    }
    assert (sorted(tree - rows), sorted(rows - tree)) == ([], [])


def test_the_rooms_are_drawn_from_the_imports_and_the_contracts() -> None:
    """architecture.md's rooms and arrows are what tools/codemap.py renders now (run it)."""
    page = (DOCS / "concepts" / "architecture.md").read_text()
    drawn = codemap.current(page, codemap.ROOMS_BEGIN, codemap.ROOMS_END)
    assert drawn == codemap.render_rooms(), "stale: python tools/codemap.py"


def test_every_arrow_between_rooms_is_one_the_contracts_allow() -> None:
    """No room imports one a layers contract ranks above it, an independent sibling, or one a
    forbidden contract names (read from the imports, not the page)."""
    assert archmap.read().broken() == []


def test_the_room_check_refuses_arrows_up_across_and_forbidden() -> None:
    """The check is not vacuous: an upward, a sibling and a forbidden arrow are each refused."""
    found = archmap.contracts()
    top = archmap.TOP
    for src, dst in [
        ("model", "planner"),  # runs up
        ("rpc", "agent"),  # independent rooms of one layer
        ("agent.kuberay", "agent.victims"),  # they meet only in the builder
        ("agent.victims", "agent.kube"),  # layered down, but forbidden
    ]:
        assert archmap.verdict(found, f"{top}.{src}", f"{top}.{dst}").startswith("breaks"), src
    assert archmap.verdict(found, f"{top}.cli", f"{top}.model") == archmap.KEPT


def test_the_newcomers_table_names_modules_that_exist() -> None:
    """Every module path in architecture.md's "Where a behaviour lives" table is in the tree."""
    page = (DOCS / "concepts" / "architecture.md").read_text()
    section = page.split("## Where a behaviour lives", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "?" in line]
    paths = re.findall(r"`([a-z_/]+(?:\.py|/))`", "\n".join(rows))
    missing = [p for p in paths if not (ROOT / "keda_ray_scaler" / p).exists()]
    assert (len(rows) >= 5, len(paths) >= 5, missing) == (True, True, [])


def test_the_cli_reference_names_every_flag_of_every_command() -> None:
    """Each command's every option string appears in its section of the CLI page."""
    text = docgen.render()
    for command, parser in docgen.subcommands().items():
        section = text.split(f"## `keda-ray-scaler {command}`")[1].split("\n## ")[0]
        flags = {s for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")}
        assert sorted(f for f in flags if f"`{f}`" not in section) == [], command


def test_every_relative_link_and_anchor_resolves() -> None:
    """A link from the README or a docs page names a file that exists, and a heading in it."""
    broken = []
    for page in PAGES:
        prose = re.sub(r"`[^`\n]*`", "", page.read_text())  # a regex in code is no link
        for target in LINK.findall(prose):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists() or (
                anchor and dest.suffix == ".md" and anchor not in anchors(dest)
            ):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    """At most ~10 KB; its first code block sets up and runs the demo, then the tests."""
    text = README.read_text()
    assert len(text.encode()) <= 10_240
    first_block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands == ["make install && make demo", "make test"]


def test_the_documented_scaledobjects_fall_back_as_their_mode_needs() -> None:
    """A documented ScaledObject of a RayWorkerGroup (KubeRay mode) has no ``fallback`` (one
    starts a pod at zero on KEDA 2.19+); one of a Deployment keeps ``currentReplicas`` with
    ``replicas`` of at least 1 (0 scales a failing group to zero): docs/design/keda-fallback.md."""
    seen = 0
    for page in PAGES:
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S):
            if "kind: ScaledObject" not in block:
                continue
            spec = yaml.safe_load(block)["spec"]
            if spec["scaleTargetRef"].get("kind") == "RayWorkerGroup":
                assert "fallback" not in spec, page
            else:
                assert spec["fallback"]["behavior"] == "currentReplicas", page
                assert spec["fallback"]["replicas"] >= 1, page
            seen += 1
    assert seen >= 1


def test_user_docs_carry_no_issue_numbers_or_development_history() -> None:
    """No "issue N" or "#N" of this project outside the design records."""
    found = []
    for page in PAGES:
        if page.parent.name == "design":
            continue
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if re.search(r"\bissue \d+|\(#\d+\)|\bA\d\b", line):
                found.append(f"{page.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []
