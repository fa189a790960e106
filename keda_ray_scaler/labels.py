"""Ray node labels and label selectors (Ray 2.49+): the values, their syntax, matching. Pure.

A node (a worker group's pods) carries labels, ``{"market-type": "spot"}``; a task, actor,
placement-group bundle or ``request_resources`` bundle may carry an ordered list of selectors,
its fallback order (``label_selector`` then ``fallback_strategy``). Matching is Ray 2.60's
(``autoscaler/v2/scheduler.py`` ``_satisfies_label_constraints``): a selector holds when every
constraint does; ``in`` needs the key with one of the values, ``!in`` holds when the key is
absent or has another value. The proto (``common.proto`` ``LabelSelectorOperator``) has only
those two; ``exists`` and ``does not exist`` are Kubernetes' and this model's.

Syntax is Ray's (``_private/label_utils.py``, Kubernetes-like): a key is an optional DNS prefix
(at most 253 characters) and ``/``, then a name of at most 63 characters, alphanumeric at both
ends with ``-``, ``_`` and ``.`` between; a value is empty or such a name. So no key or value
holds ``=``, ``,``, ``;``, ``|``, ``!``, ``(``, ``)`` or ``*``, which the canonical text uses::

    market-type=spot,zone=in(a,b)     one selector: every constraint (sorted) must hold
    market-type=spot;*                fallbacks in order; ``*`` is the empty selector (any node)
    gpu=!in(A10,T4)  gpu=!T4  gpu  !gpu   not in; not equal; exists; does not exist
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

#: Ray's default label of a node's worker group (its ``RAY_NODE_TYPE_NAME``, the group's name).
NODE_GROUP_LABEL: Final = "ray.io/node-group"

_NAME: Final = r"[a-zA-Z0-9](?:[a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9])?"
_NAME_RE: Final = re.compile(_NAME)
_PREFIX_RE: Final = re.compile(rf"(?:{_NAME})?(?:\.(?:{_NAME})?)*")  # Ray's LABEL_PREFIX_REGEX
MAX_PREFIX_CHARS: Final = 253

#: Bounds where labels and selectors enter (a node's or group's labels; one demand's selectors):
#: beyond them the value is refused, so the export and the plan stay bounded.
MAX_LABELS: Final = 64
MAX_SELECTORS: Final = 8  # one demand's fallback list
MAX_CONSTRAINTS: Final = 16  # constraints of one selector
MAX_VALUES: Final = 16  # values of one constraint
MAX_SELECTOR_CHARS: Final = 1024  # the canonical text of one demand's list


class LabelError(ValueError):
    """A label or selector that breaks a rule above; the message says which."""


def key_problem(key: str) -> str | None:
    """What is wrong with a label key, or None (Ray's ``validate_label_key``)."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > MAX_PREFIX_CHARS or not _PREFIX_RE.fullmatch(prefix)):
        return f"label key prefix {prefix[:80]!r} is not a DNS prefix of at most 253 characters"
    if not _NAME_RE.fullmatch(name):
        return f"label key {key[:80]!r}: the name must be 1-63 alphanumerics, '-', '_', '.'"
    return None


def value_problem(value: str) -> str | None:
    """What is wrong with a label value, or None (empty, or as a key's name)."""
    if value and not _NAME_RE.fullmatch(value):
        return f"label value {value[:80]!r} must be empty or 1-63 alphanumerics, '-', '_', '.'"
    return None


def _check(problem: str | None) -> None:
    if problem:
        raise LabelError(problem)


class Labels(Mapping[str, str]):
    """An immutable, hashable label map; iterates in key order. ``str()``: ``k=v,k2=v2``."""

    __slots__ = ("_map", "_pairs")

    def __init__(self, items: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs: dict[str, str] = dict(items.items() if isinstance(items, Mapping) else items)
        self._pairs: tuple[tuple[str, str], ...] = tuple(sorted(pairs.items()))
        self._map: dict[str, str] = dict(self._pairs)

    @classmethod
    def checked(cls, items: Mapping[str, str]) -> Labels:
        """``items`` as labels; LabelError on a bad key or value, or more than MAX_LABELS."""
        if len(items) > MAX_LABELS:
            raise LabelError(f"{len(items)} labels, more than {MAX_LABELS}")
        for key, value in items.items():
            _check(key_problem(key))
            _check(value_problem(value))
        return cls(items)

    @classmethod
    def parse(cls, text: str) -> Labels:
        """The inverse of ``str()``; checked. ``"k1=v1,k2=v2"`` is also ``rayStartParams``'
        ``labels`` syntax (spaces around the pairs stripped, as Ray's parser does)."""
        text = text.strip().strip('"')
        out: dict[str, str] = {}
        for pair in text.split(",") if text else ():
            key, eq, value = pair.partition("=")
            if not eq or "=" in value or key.strip() in out:
                raise LabelError(f"{pair[:80]!r} is no key=value pair, or a key given twice")
            out[key.strip()] = value.strip()
        return cls.checked(out)

    def __getitem__(self, key: str) -> str:
        return self._map[key]

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """The value of ``key``, or ``default``: the dict's own lookup (the planner asks often;
        one signature stands for Mapping.get's overloads, hence the ignore)."""
        return self._map.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._pairs)

    def __hash__(self) -> int:
        return hash(self._pairs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Labels):
            return self._pairs == other._pairs
        return isinstance(other, Mapping) and self._map == dict(other.items())

    def __repr__(self) -> str:
        return f"Labels({self._map!r})"

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self._pairs)


class LabelOperator(enum.StrEnum):
    """How one constraint tests a node's label."""

    IN = "in"  # the key with one of the values
    NOT_IN = "not_in"  # the key absent, or with none of the values
    EXISTS = "exists"
    DOES_NOT_EXIST = "does_not_exist"


_VALUED: Final = (LabelOperator.IN, LabelOperator.NOT_IN)


@dataclass(frozen=True, slots=True, order=True)
class LabelConstraint:
    """One test of a node's label ``key``; ``values`` sorted, none for (does not) exist."""

    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, key: str, operator: LabelOperator, values: Iterable[str] = ()) -> LabelConstraint:
        """A checked constraint: the key's and values' syntax, the values' count."""
        _check(key_problem(key))
        vals = tuple(sorted(set(values)))
        several_with_empty = len(vals) > 1 and vals[0] == ""  # "" sorts first; alone only
        if (operator in _VALUED) != bool(vals) or len(vals) > MAX_VALUES or several_with_empty:
            raise LabelError(f"{key}: {operator.value} with values {vals[:4]!r}")
        for v in vals:
            _check(value_problem(v))
        return cls(key, operator, vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with ``labels`` satisfies this constraint."""
        op = self.operator
        if op is LabelOperator.IN:
            return labels.get(self.key) in self.values
        if op is LabelOperator.NOT_IN:
            return labels.get(self.key) not in self.values
        return (self.key in labels) is (op is LabelOperator.EXISTS)

    def __str__(self) -> str:
        op, key, vals = self.operator, self.key, self.values
        if op is LabelOperator.EXISTS:
            return key
        if op is LabelOperator.DOES_NOT_EXIST:
            return f"!{key}"
        neg = "!" if op is LabelOperator.NOT_IN else ""
        return f"{key}={neg}{vals[0]}" if len(vals) == 1 else f"{key}={neg}in({','.join(vals)})"


def constraint_from_text(key: str, value: str | None) -> LabelConstraint:
    """One constraint from Ray's syntax: ``value`` ``spot``, ``!spot``, ``in(a,b)``,
    ``!in(a, b)``; ``None`` is "the key exists" (and ``!key`` "does not exist")."""
    if value is None:
        if key.startswith("!"):
            return LabelConstraint.of(key[1:], LabelOperator.DOES_NOT_EXIST)
        return LabelConstraint.of(key, LabelOperator.EXISTS)
    neg = value.startswith("!")
    body = value[1:] if neg else value
    op = LabelOperator.NOT_IN if neg else LabelOperator.IN
    if body.startswith("in(") and body.endswith(")"):
        vals = [v.strip() for v in body[3:-1].split(",")]
        if "" in vals:
            raise LabelError(f"{key}: an empty value in {value[:80]!r}")
        return LabelConstraint.of(key, op, vals)
    return LabelConstraint.of(key, op, (body,))


@dataclass(frozen=True, slots=True, order=True)
class LabelSelector:
    """Constraints a node must all satisfy (sorted, no duplicates); none: any node."""

    constraints: tuple[LabelConstraint, ...] = ()

    @classmethod
    def of(cls, constraints: Iterable[LabelConstraint]) -> LabelSelector:
        """The canonical selector of ``constraints``; LabelError beyond MAX_CONSTRAINTS."""
        found = tuple(sorted(set(constraints)))
        if len(found) > MAX_CONSTRAINTS:
            raise LabelError(f"{len(found)} constraints, more than {MAX_CONSTRAINTS}")
        return cls(found)

    @classmethod
    def from_ray(cls, selector: Mapping[str, str]) -> LabelSelector:
        """Ray's dict form, ``{"market-type": "spot", "zone": "in(a,b)"}``; checked."""
        return cls.of(constraint_from_text(k, v) for k, v in selector.items())

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with ``labels`` satisfies every constraint."""
        return all(c.matches(labels) for c in self.constraints)

    def __str__(self) -> str:
        return ",".join(map(str, self.constraints)) or "*"


#: One demand's selectors in fallback order; empty: any node.
Selectors = tuple[LabelSelector, ...]


def canonical(items: Iterable[LabelSelector]) -> Selectors:
    """The canonical list: nothing after an empty selector (it admits every node), no repeats
    (a later copy never wins), and ``()`` for "any node"."""
    out: list[LabelSelector] = []
    for sel in items:
        if sel not in out:
            out.append(sel)
        if not sel.constraints:
            break
    return () if out == [LabelSelector()] else tuple(out)


def selectors_of(items: Iterable[LabelSelector]) -> Selectors:
    """The :func:`canonical` list; LabelError beyond MAX_SELECTORS or MAX_SELECTOR_CHARS."""
    out = canonical(items)
    if len(out) > MAX_SELECTORS:
        raise LabelError(f"{len(out)} fallback selectors, more than {MAX_SELECTORS}")
    text = selectors_text(out)
    if len(text) > MAX_SELECTOR_CHARS:
        raise LabelError(f"selectors of {len(text)} characters, more than {MAX_SELECTOR_CHARS}")
    return out


def selectors_text(selectors: Sequence[LabelSelector]) -> str:
    """The canonical text of a list (the module docstring); ``""`` for none."""
    return ";".join(map(str, selectors))


def parse_selectors(text: str) -> Selectors:
    """The inverse of :func:`selectors_text`; LabelError on anything else."""
    if not text:
        return ()
    sels = []
    for part in text.split(";"):
        if part == "*":
            sels.append(LabelSelector())
            continue
        constraints = []
        for item in _split_outside_parens(part):
            key, eq, value = item.partition("=")
            constraints.append(constraint_from_text(key, value if eq else None))
        sels.append(LabelSelector.of(constraints))
    found = selectors_of(sels)
    if selectors_text(found) != text:
        raise LabelError(f"selectors {text[:120]!r} are not in canonical form")
    return found


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    if depth or any(not p for p in parts):
        raise LabelError(f"selector {text[:120]!r} is malformed")
    return parts


def admits(selectors: Selectors, labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` may take demand with ``selectors`` (any of them)."""
    return not selectors or any(s.matches(labels) for s in selectors)
