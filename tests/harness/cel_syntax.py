"""A syntax and scope check of CEL expressions, for the shipped admission policies' unit tests.

:func:`problems` parses one expression with CEL's grammar (the language definition's
``Expr``, ``ConditionalOr`` ... ``Primary``: literals, ``? :``, ``|| && !``, relations and
``in``, arithmetic, selection, indexing, calls, lists and maps) and the macros' shape
(``has(a.b)``; ``e.all|exists|exists_one|filter|map(x, ...)`` bind ``x``), and names every free
identifier that is not one the API server declares for a ValidatingAdmissionPolicy (``object``,
``oldObject``, ``request``, ``variables`` ...), and every ``variables.X`` not declared. It does
not type-check: the real API server compiles each policy (tests/real/control_plane).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

#: What a ValidatingAdmissionPolicy's expressions may name (Kubernetes' admission CEL env).
ROOTS = frozenset(
    {"object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables"}
)
MACROS = frozenset({"all", "exists", "exists_one", "filter", "map"})
_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<string>[rR]?[bB]?[rR]?('''.*?'''|\"\"\".*?\"\"\"|'(\\.|[^'\\\n])*'|"(\\.|[^"\\\n])*"))
    |(?P<number>0x[0-9a-fA-F]+u?|\d+\.\d*([eE][+-]?\d+)?|\d+([eE][+-]?\d+)|\.\d+|\d+u?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\|\||&&|==|!=|<=|>=|[-+*/%<>!?:.,()\[\]{}])""",
    re.VERBOSE | re.DOTALL,
)
_RESERVED = frozenset({"true", "false", "null"})


class CelSyntaxError(ValueError):
    """An expression that is not CEL, with where it stopped."""


def tokens(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of each token; kind is string, number, ident or op."""
    out, at = [], 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            raise CelSyntaxError(f"unexpected {text[at : at + 10]!r} at {at}")
        kind = m.lastgroup or ""
        if kind != "space":
            out.append((kind, m.group()))
        at = m.end()
    return out


@dataclass
class _Parser:
    toks: list[tuple[str, str]]
    variables: frozenset[str]
    at: int = 0
    free: set[str] = field(default_factory=set)
    bound: list[str] = field(default_factory=list)

    def peek(self, ahead: int = 0) -> str:
        i = self.at + ahead
        return self.toks[i][1] if i < len(self.toks) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.toks):
            raise CelSyntaxError(f"unexpected end, wanted {want or 'more'}")
        tok = self.toks[self.at]
        if want is not None and tok[1] != want:
            raise CelSyntaxError(f"wanted {want!r}, got {tok[1]!r} at token {self.at}")
        self.at += 1
        return tok

    def expr(self) -> None:
        self.binary(0)
        if self.peek() == "?":
            self.take("?")
            self.binary(0)
            self.take(":")
            self.expr()

    LEVELS = (
        ("||",),
        ("&&",),
        ("<", "<=", ">=", ">", "==", "!=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary(self, level: int) -> None:
        if level == len(self.LEVELS):
            return self.unary()
        self.binary(level + 1)
        while self.peek() in self.LEVELS[level]:
            self.take()
            self.binary(level + 1)
        return None

    def unary(self) -> None:
        while self.peek() in ("!", "-"):
            self.take()
        self.member()

    def member(self) -> None:
        receiver = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == "[":
                self.expr()
                self.take("]")
                receiver = None
                continue
            kind, name = self.take()
            if kind != "ident":
                raise CelSyntaxError(f"a field or method name after '.', got {name!r}")
            if self.peek() == "(":
                self.call(name if name in MACROS else None)
            elif receiver == "variables" and name not in self.variables:
                raise CelSyntaxError(f"variables.{name} is not declared")
            receiver = None

    def call(self, macro: str | None) -> None:
        self.take("(")
        if macro is not None:
            kind, var = self.take()
            if kind != "ident":
                raise CelSyntaxError(f"{macro}() binds a name first, got {var!r}")
            self.take(",")
            self.bound.append(var)
            self.args(")")
            self.bound.pop()
            return
        self.args(")")

    def args(self, close: str) -> None:
        while self.peek() != close:
            self.expr()
            if self.peek() != ",":
                break
            self.take(",")
        self.take(close)

    def primary(self) -> str | None:
        kind, text = self.take()
        if kind in ("string", "number") or text in _RESERVED:
            return None
        if text == "(":
            self.expr()
            self.take(")")
        elif text == "[":
            self.args("]")
        elif text == "{":
            self.map_inits()
        elif kind == "ident":
            return self.identifier(text)
        else:
            raise CelSyntaxError(f"unexpected {text!r} at token {self.at - 1}")
        return None

    def identifier(self, name: str) -> str:
        if self.peek() == "(":
            if name == "has":
                self.take("(")
                self.expr()
                if self.toks[self.at - 2][1] != ".":
                    raise CelSyntaxError("has() takes a field selection: has(a.b)")
                self.take(")")
            else:
                self.call(None)
        elif name not in self.bound:
            self.free.add(name)
        return name

    def map_inits(self) -> None:
        while self.peek() != "}":
            self.expr()
            self.take(":")
            self.expr()
            if self.peek() != ",":
                break
            self.take(",")
        self.take("}")


def problems(expression: str, variables: Iterable[str] = ()) -> list[str]:
    """What is wrong with ``expression`` (empty: it parses and names only what it may)."""
    try:
        parser = _Parser(tokens(expression), frozenset(variables))
        parser.expr()
        if parser.at != len(parser.toks):
            raise CelSyntaxError(f"trailing {parser.peek()!r} at token {parser.at}")
    except CelSyntaxError as exc:
        return [str(exc)]
    return [f"undeclared identifier {name!r}" for name in sorted(parser.free - ROOTS)]
