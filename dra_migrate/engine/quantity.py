"""Device counts from Kubernetes resource quantities (ints or strings like "2", '1', "1000m")."""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from decimal import Decimal

# The multiplier of each suffix, as the Decimal it is made into.
_SUFFIXES: dict[str, str | int] = {
    "": 1,
    "n": "1e-9",
    "u": "1e-6",
    "m": "1e-3",
    "k": "1e3",
    "M": "1e6",
    "G": "1e9",
    "T": "1e12",
    "P": "1e15",
    "E": "1e18",
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
# Patterns here are strings, compiled by re on first use (and kept in its cache): most counts are
# plain integers, and a run that never meets another form does not pay for compiling them.
_QUANTITY = r"([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?\d+))?"


# Kubernetes keeps integer quantities in an int64.
_INT64_MAX = 2**63 - 1


class QuantityError(ValueError):
    pass


def describe(value: object) -> str:
    """A value as it reads in a manifest (`null`, `true`, `"abc"`, `2.5`), not as Python prints it."""
    if isinstance(value, str | bool) or value is None:
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return str(value)
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else str(value)


# Unrendered template placeholders: Go templates, envsubst/shell variables, __X__ and <X> markers, and
# SCREAMING_SNAKE words (PLACEHOLDER_NUM_GPU) that sed-based pipelines replace before applying.
_PLACEHOLDER = r".*(\{\{.*\}\}|\$\{?[A-Za-z_]\w*).*|__\w+__|<[A-Za-z_][\w.-]*>|[A-Z][A-Z0-9]*(_[A-Z0-9]+)+"


def is_placeholder(value: object) -> bool:
    """Whether a count is an unrendered template value: a placeholder, or null (an empty template value)."""
    return value is None or (isinstance(value, str) and re.fullmatch(_PLACEHOLDER, value.strip(), re.S) is not None)


def parse_quantity(value: object) -> Decimal:
    """Parse the Kubernetes quantity grammar; bools and other YAML types are rejected."""
    from decimal import Decimal, InvalidOperation  # loaded only for counts that are not plain integers

    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise QuantityError(f"{describe(value)} is not a valid quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = re.fullmatch(_QUANTITY, value.strip())
    if not match:
        raise QuantityError(f"{describe(value)} is not a valid quantity")
    number, suffix, exponent = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{describe(value)} is not a valid quantity") from exc
    if exponent is not None:
        try:
            return base.scaleb(int(exponent))
        except ArithmeticError:  # beyond Decimal's exponent range, e.g. "1E9999999"
            raise QuantityError(f"{value!r} is out of range") from None
    return base * Decimal(_SUFFIXES[suffix or ""])


def device_count(value: object) -> int:
    """A whole, non-negative device count; extended resources cannot be fractional."""
    # The few counts every pod repeats are parsed once (bounded keys: short strings, int64 values).
    if (isinstance(value, str) and len(value) <= 32) or (isinstance(value, int) and abs(value) < 1 << 63):
        return _cached_device_count(value)
    return _device_count(value)


@functools.lru_cache(maxsize=256, typed=True)  # typed: 1, True and "1" are different input
def _cached_device_count(value: str | int) -> int:
    return _device_count(value)


def _device_count(value: object) -> int:
    if type(value) is int:  # the usual `nvidia.com/gpu: 2`, checked as parse_quantity's Decimal would be
        if abs(value) > _INT64_MAX:
            raise QuantityError(f"{value!r} is out of range")
        if value < 0:
            raise QuantityError(f"{describe(value)} is negative")
        return value
    quantity = parse_quantity(value)
    if not quantity.is_finite() or abs(quantity) > _INT64_MAX:  # also before int(): 1E900000 has 900,001 digits
        raise QuantityError(f"{value!r} is out of range")
    if quantity < 0:
        raise QuantityError(f"{describe(value)} is negative")
    if quantity != quantity.to_integral_value():
        raise QuantityError(f"{describe(value)} is not a whole number of devices")
    return int(quantity)
