"""Decoders of one field of a cluster spec or snapshot, each raising a ConfigError naming it.

Every decoder takes ``where`` (the file) and ``field`` (its path, ``workerGroups[1].resources``)
and returns the field's value, or raises a :class:`~keda_ray_scaler.errors.ConfigError` that
names both and says what is wrong. :mod:`~keda_ray_scaler.config` assembles whole files from them.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from keda_ray_scaler.errors import ConfigError
from keda_ray_scaler.identity import is_dns_label
from keda_ray_scaler.labels import LabelError, Labels, LabelSelector, Selectors, selectors_of
from keda_ray_scaler.model import BYTE_RESOURCES, RESOURCE_SCALE, Resources

E = TypeVar("E", bound=enum.StrEnum)


#: A Kubernetes quantity: a decimal number, then an exponent or a suffix (``32Gi``, ``500M``).
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)
_SUFFIX = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{
        s: Decimal(10) ** e
        for s, e in zip("numkMGTPE", (-9, -6, -3, 3, 6, 9, 12, 15, 18), strict=True)
    },
}


def field_path(parent: str, child: str | int) -> str:
    """The path of ``child`` (a key or an index) under ``parent``: ``a.b``, ``a[1]``."""
    if isinstance(child, int):
        return f"{parent}[{child}]"
    return f"{parent}.{child}" if parent else child


def as_mapping(data: object, where: str, field: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    """``data`` as a mapping whose every key is one of ``keys``: a typo is an error."""
    if not isinstance(data, Mapping):
        raise ConfigError(where, field or "(top level)", f"expected a mapping, got {_kind(data)}")
    for key in data:
        if key not in keys:
            allowed = ", ".join(keys)
            raise ConfigError(
                where, field_path(field, str(key)), f"unknown key (allowed: {allowed})"
            )
    return data


def as_list(data: object, where: str, field: str) -> list[Any]:
    """``data`` as a list."""
    if not isinstance(data, list):
        raise ConfigError(where, field, f"expected a list, got {_kind(data)}")
    return data


def _kind(data: object) -> str:
    return "nothing" if data is None else type(data).__name__


def required(data: Mapping[str, Any], key: str, where: str, field: str) -> Any:
    """``data[key]``, which must be present and not null."""
    if key not in data or data[key] is None:
        raise ConfigError(where, field_path(field, key), "required")
    return data[key]


def as_dns_label(data: object, where: str, field: str) -> str:
    """``data`` as a name: a DNS-1123 label."""
    if not isinstance(data, str) or not is_dns_label(data):
        raise ConfigError(
            where, field, f"{data!r} is not a DNS-1123 label (lowercase letters, digits, '-')"
        )
    return data


def as_int(data: object, where: str, field: str, minimum: int = 0) -> int:
    """``data`` as an integer of at least ``minimum`` (a bool is not one)."""
    if isinstance(data, bool) or not isinstance(data, int):
        raise ConfigError(where, field, f"expected an integer, got {data!r}")
    if data < minimum:
        raise ConfigError(where, field, f"must be at least {minimum}, got {data}")
    return data


def as_number(data: object, where: str, field: str, positive: bool = False) -> float:
    """``data`` as a finite non-negative number, above zero when ``positive``."""
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise ConfigError(where, field, f"expected a number, got {data!r}")
    value = float(data)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ConfigError(
            where,
            field,
            f"must be a finite {'positive' if positive else 'non-negative'} number, got {data!r}",
        )
    return value


def as_enum(kind: type[E], raw: object, where: str, field: str) -> E:
    """``raw`` as a member of the string enum ``kind``; the error lists the allowed values."""
    for member in kind:
        if member.value == raw:
            return member
    allowed = ", ".join(m.value for m in kind)
    raise ConfigError(where, field, f"{raw!r} is not one of {allowed}")


def _string_map(data: object, where: str, field: str) -> dict[str, str]:
    if not isinstance(data, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigError(where, field, f"expected a map of strings, got {_kind(data)}")
    return dict(data)


def as_labels(data: object, where: str, field: str) -> Labels:
    """``{market-type: spot}`` as Ray node labels (Ray's key and value syntax)."""
    try:
        return Labels.checked(_string_map(data, where, field))
    except LabelError as exc:
        raise ConfigError(where, field, str(exc)) from exc


def as_selectors(data: object, where: str, field: str) -> Selectors:
    """``[{market-type: spot}, {}]``: label selectors in fallback order, each in Ray's dict
    form (values ``spot``, ``!spot``, ``in(a,b)``, ``!in(a,b)``; ``{}`` is any node)."""
    items = as_list(data, where, field)
    try:
        return selectors_of(
            LabelSelector.from_ray(_string_map(s, where, field_path(field, i)))
            for i, s in enumerate(items)
        )
    except LabelError as exc:
        raise ConfigError(where, field, str(exc)) from exc


def as_int32(data: object, where: str, field: str) -> int:
    """``data`` as a Kubernetes int32 (negative allowed)."""
    value = as_int(data, where, field, minimum=-(2**31))
    if value >= 2**31:
        raise ConfigError(where, field, f"must be at most {2**31 - 1}, got {value}")
    return value


def _amount_units(name: str, value: object, where: str, field: str) -> int:
    """One resource amount in Ray's fixed point (bytes for memory, as Kubernetes quantities)."""
    if isinstance(value, bool):
        raise ConfigError(where, field, f"expected a number, got {value!r}")
    if name in BYTE_RESOURCES:
        if not isinstance(value, int | float | str):
            raise ConfigError(
                where, field, f"expected bytes or a quantity like 32Gi, got {value!r}"
            )
        try:
            amount = parse_quantity(value)
        except (ValueError, InvalidOperation) as exc:
            raise ConfigError(where, field, f"{value!r} is not a quantity like 32Gi") from exc
    elif isinstance(value, int | float):
        amount = Decimal(value) if math.isfinite(value) else Decimal("NaN")
    else:
        raise ConfigError(where, field, f"expected a number, got {value!r}")
    if not amount.is_finite() or amount < 0:
        raise ConfigError(where, field, f"must be a finite non-negative amount, got {value!r}")
    return int((amount * RESOURCE_SCALE).to_integral_value())


def parse_quantity(value: int | float | str) -> Decimal:
    """A Kubernetes quantity (``32Gi``, ``500M``, ``1e3``, ``128974848``) as a Decimal.

    The grammar of ``k8s.io/apimachinery`` ``resource.Quantity``, as the Kubernetes client's
    ``parse_quantity`` reads it; kept here so parsing a spec imports no Kubernetes client.
    """
    if not isinstance(value, str):
        return Decimal(str(value))
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise ValueError(f"{value!r} is not a quantity")
    number, exponent, suffix = m.groups()
    if exponent is not None:
        return Decimal(number) * Decimal(10) ** int(exponent)
    return Decimal(number) * _SUFFIX[suffix] if suffix else Decimal(number)


def parse_resources(mapping: object, where: str, field: str) -> Resources:
    """``{CPU: 10, memory: 32Gi, "accelerator_type:A100": 1}`` as ``Resources``.

    CPU, GPU and custom resources are numbers (rounded to Ray's 0.0001); ``memory`` and
    ``object_store_memory`` are bytes or Kubernetes quantities (``32Gi``, ``500M``).
    """
    if not isinstance(mapping, Mapping):
        raise ConfigError(where, field, f"expected a mapping of resources, got {_kind(mapping)}")
    units: dict[str, int] = {}
    for name, value in mapping.items():
        sub = f"{field}.{name}" if field else str(name)
        if not isinstance(name, str) or not name:
            raise ConfigError(where, sub, "resource names must be non-empty strings")
        units[name] = _amount_units(name, value, where, sub)
    return Resources.from_units(units)
