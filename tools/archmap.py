"""The rooms of ``keda_ray_scaler`` and the arrows between them, checked against the contracts.

A room is a unit an import-linter layer names (``keda_ray_scaler.cli``, ``…agent.victims``,
``…agent.builder``) or a package (``rpc/refresh/``); a module belongs to the longest room that
holds it, the modules no room holds form their package's own room, and ``__main__`` is its own.
An arrow is a room importing another (read with :mod:`ast`, nothing is imported; imports under
``TYPE_CHECKING`` count, as they do for import-linter). Each arrow gets the contracts' verdict
(``[[tool.importlinter.contracts]]`` in pyproject.toml, read with :mod:`tomllib`): a layers
contract keeps it when it runs down, breaks it when it runs up or joins two independent rooms of
one layer, and a forbidden contract breaks it when it names both rooms whole.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keda_ray_scaler"
TOP = PACKAGE.name
KEPT, UNRANKED = "kept", "unranked"  # an arrow's verdict when no contract breaks it


@dataclass(frozen=True)
class Layers:
    """One layers contract, flattened: each layer's rooms (full names) and their independence."""

    name: str
    layers: tuple[tuple[tuple[str, ...], bool], ...]  # (rooms of one layer, independent)


@dataclass(frozen=True)
class Forbidden:
    """One forbidden contract's internal modules: sources that may not import the forbidden."""

    name: str
    sources: tuple[str, ...]
    forbidden: tuple[str, ...]


@dataclass(frozen=True)
class Contracts:
    """The import-linter contracts of pyproject.toml, with the names of every contract."""

    layers: tuple[Layers, ...]
    forbidden: tuple[Forbidden, ...]
    names: tuple[str, ...]
    containers: tuple[str, ...]  # the packages a layers contract ranks the insides of


def _layer(text: str, container: str) -> tuple[tuple[str, ...], bool]:
    """One layer's text (``"a | b"``, ``"a : b"``, ``"(a)"``) as full names and independence."""
    sep = ":" if ":" in text else "|"
    names = [part.strip().strip("()") for part in text.split(sep)]
    return tuple(f"{container}.{n}" if container else n for n in names), sep == "|"


def contracts(pyproject: Path = ROOT / "pyproject.toml") -> Contracts:
    """Read ``[[tool.importlinter.contracts]]``: the layers and forbidden contracts."""
    raw = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    layers, forbidden, containers = [], [], []
    for c in raw:
        containers.extend(c.get("containers", []))
        if c["type"] == "layers":
            for container in c.get("containers", [""]):
                flat = tuple(_layer(text, container) for text in c["layers"])
                layers.append(Layers(c["name"], flat))
        elif c["type"] == "forbidden":
            inside = tuple(m for m in c["forbidden_modules"] if m.startswith(TOP))
            forbidden.append(Forbidden(c["name"], tuple(c["source_modules"]), inside))
    names = tuple(c["name"] for c in raw)
    return Contracts(tuple(layers), tuple(forbidden), names, tuple(containers))


def covers(outer: str, inner: str) -> bool:
    """``inner`` is ``outer`` or inside it."""
    return inner == outer or inner.startswith(outer + ".")


def module_files() -> dict[str, Path]:
    """Every module's full dotted name (a package by its ``__init__``); generated code left out."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_generated" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def rooms(found: Contracts, modules: Iterable[str]) -> tuple[str, ...]:
    """Every room's full name: layer names, packages and ``__main__``, plus the top package."""
    names = {room for layers in found.layers for rs, _ in layers.layers for room in rs}
    mods = set(modules)
    packages = {m.rsplit(".", 1)[0] for m in mods if "." in m}
    main = {m for m in mods if m.endswith(".__main__")}
    return tuple(sorted(({TOP} | packages | main | names) & (mods | packages)))


def room_of(module: str, all_rooms: Iterable[str]) -> str:
    """The longest room that holds ``module`` (the top package holds every module)."""
    return max((r for r in all_rooms if covers(r, module)), key=len)


def _imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``module`` imports: ``from x import y`` counts ``x.y`` if a module."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join([*base, node.module or ""]).strip(".") if node.level else node.module
            subs = {f"{target}.{a.name}" for a in node.names} & known
            out.update(subs)
            if target and len(subs) < len(node.names):
                out.add(target)
    return {m for m in out if covers(TOP, m)}


def arrows(found: Contracts) -> dict[tuple[str, str], str]:
    """Every arrow between two rooms and the contracts' verdict on it, in order."""
    files = module_files()
    all_rooms = rooms(found, files)
    out: dict[tuple[str, str], str] = {}
    for module, path in files.items():
        src = room_of(module, all_rooms)
        for target in _imported(module, path, set(files)):
            dst = room_of(target, all_rooms)
            if dst != src:
                out[(src, dst)] = verdict(found, src, dst)
    return dict(sorted(out.items()))


def _layer_verdict(contract: Layers, src: str, dst: str) -> str | None:
    """One layers contract on ``src -> dst``: None when it does not rank both rooms apart."""
    where = {}
    for i, (names, independent) in enumerate(contract.layers):
        for name in names:
            for room in (src, dst):
                if covers(name, room):
                    where[room] = (i, name, independent)
    if len(where) < 2 or where[src][1] == where[dst][1]:
        return None
    (i, _, independent), (j, _, _) = where[src], where[dst]
    if i < j:
        return KEPT
    if i == j and not independent:
        return None
    how = "joins two independent rooms of one layer" if i == j else "runs up"
    return f"breaks {contract.name!r}: {how}"


def verdict(found: Contracts, src: str, dst: str) -> str:
    """``kept`` (a layers contract ranks it down), ``unranked``, or the first contract broken."""
    seen = UNRANKED
    for contract in found.layers:
        said = _layer_verdict(contract, src, dst)
        if said and said != KEPT:
            return said
        seen = said or seen
    for rule in found.forbidden:
        if any(covers(s, src) for s in rule.sources) and any(
            covers(f, dst) for f in rule.forbidden
        ):
            return f"breaks {rule.name!r}"
    return seen


def order(found: Contracts, room: str) -> tuple[int | str, ...]:
    """Where a room stands, top first: by each layers contract in turn, unranked last."""
    if room.endswith(".__main__"):
        return (-1,)
    key: list[int | str] = []
    for contract in found.layers:
        at = [i for i, (names, _) in enumerate(contract.layers) for n in names if covers(n, room)]
        key.append(at[0] if at else len(contract.layers))
    return (0, *key, room)


@dataclass(frozen=True)
class Tree:
    """The package read once: its contracts, modules, rooms (top first) and arrows."""

    contracts: Contracts
    files: dict[str, Path]
    rooms: tuple[str, ...]
    arrows: dict[tuple[str, str], str]

    def held(self, room: str) -> list[str]:
        """The modules a room holds besides its own file, by full name."""
        return sorted(m for m in self.files if m != room and room_of(m, self.rooms) == room)

    def broken(self) -> list[str]:
        """The arrows a contract does not allow, as ``src -> dst: why``; empty when none."""
        return [
            f"{src} -> {dst}: {why}"
            for (src, dst), why in self.arrows.items()
            if why not in (KEPT, UNRANKED)
        ]


def read() -> Tree:
    """Read the tree and pyproject.toml now."""
    found = contracts()
    files = module_files()
    ordered = sorted(rooms(found, files), key=lambda r: order(found, r))
    return Tree(found, files, tuple(ordered), arrows(found))


def drawn(all_arrows: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The arrows a drawing needs: those no longer path between other rooms already implies.

    A transitive reduction over the rooms' import cycles: an arrow inside a cycle is kept, an
    arrow between two cycles (or rooms) is left out when a third one lies on a path between them.
    """
    edges = list(all_arrows)
    nodes = {n for edge in edges for n in edge}
    reach = {n: _reach(n, edges) for n in nodes}
    cycle = {n: frozenset(m for m in reach[n] if n in reach[m]) | {n} for n in nodes}
    return [
        (u, v)
        for u, v in edges
        if cycle[u] == cycle[v]
        or not any(z not in cycle[u] and z not in cycle[v] and v in reach[z] for z in reach[u])
    ]


def _reach(start: str, edges: list[tuple[str, str]]) -> set[str]:
    """The rooms ``start`` reaches by one arrow or more."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        for u, v in edges:
            if u == node and v not in seen:
                seen.add(v)
                todo.append(v)
    return seen
