"""Sizes and rates. Rates are decimal GB/s (1 GB = 1e9 bytes) everywhere, as spec sheets use."""

from __future__ import annotations

import re

from kvbench.errors import BadInput

_UNITS = {
    "": 1, "b": 1,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(value: int | str, name: str = "size") -> int:
    """Bytes from `65536`, `"4KiB"`, `"1MiB"`, `"2GiB"` (binary) or `"1GB"` (decimal).

    Raises `BadInput` naming `name` and the bad text.
    """
    if isinstance(value, bool):
        raise BadInput(f"bad {name} {value!r}: expected a byte count such as 65536 or 4KiB")
    if isinstance(value, int):
        if value < 0:
            raise BadInput(f"bad {name} {value}: must not be negative")
        return value
    match = _SIZE.match(str(value))
    if not match or match.group(2).lower() not in _UNITS:
        raise BadInput(
            f"bad {name} '{value}': use bytes (65536) or a unit: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB"
        )
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


_COUNT = re.compile(r"^\s*([+-]?\d+)\s*([kK][iI]?)?\s*$")
# k is 1024 in a count, as context lengths are counted (an "8k context" is 8192 tokens; issue 57 item 13):
# 8k, 8K and 8Ki are 8192. Sizes keep their own units (KB = 1000 B, KiB = 1024 B) and rates stay decimal.
COUNT_FORM = "a whole number such as 8192, or 8k = 8Ki = 8192 (k = 1024, as context lengths count)"


def parse_count(value: int | str, name: str) -> int:
    """A whole count from `8192`, `"8192"` or `"8k"` / `"8K"` / `"8Ki"` (× 1024: an 8k context is 8192 tokens);
    `BadInput` naming `name` (`--tokens`, `tokens=`) and the accepted forms otherwise."""
    if isinstance(value, bool):
        raise BadInput(f"bad {name} {value!r}: give {COUNT_FORM}")
    if isinstance(value, int):
        return value
    match = _COUNT.match(str(value))
    if not match:
        raise BadInput(f"bad {name} '{value}': give {COUNT_FORM}")
    return int(match.group(1)) * (1024 if match.group(2) else 1)


def format_size(size_bytes: int) -> str:
    """`268435456` → `"256MiB"`; sizes that are no whole binary unit stay in bytes."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor and size_bytes % factor == 0:
            return f"{size_bytes // factor}{unit}"
    return f"{size_bytes}B"


def gbps(size_bytes: float, seconds: float) -> float:
    """Decimal GB/s for `size_bytes` moved in `seconds`."""
    return size_bytes / seconds / 1e9


def format_gbps(value: float | None) -> str:
    """A rate for a table: three significant digits, `-` when absent."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


# No path kvbench measures comes within 100x of 1 PB/s (HBM3e ~5-8 TB/s): a rate or peak beyond it, in an
# export or a user's peaks file, is a corrupted or mistyped number, never a measurement or a datasheet.
MAX_GBPS = 1e6
