"""A verdict on a case measured under contention says so, instead of calling a change it cannot tell
from a busy neighbour (the contention record: kvbench/hardware/contention.py, docs/contention.md).

`compare` (and every command that shares its comparison) turns `slower` or `faster` into
`ambiguous (contended)` when either run's case was contended: such a change is shown, never gated.
"""

from __future__ import annotations

from typing import Any

from kvbench.metadata import CONTENTION

AMBIGUOUS_CONTENDED = "ambiguous (contended)"


def contention_reasons(result: dict[str, Any]) -> list[str]:
    """Why a stored result (a run document's row) was measured under contention; [] when clean or not recorded."""
    record = (result.get("metadata") or {}).get(CONTENTION) or {}
    return list(record.get("contended") or [])


def weigh_contention(verdict: str, note: str, base: dict[str, Any], new: dict[str, Any]) -> tuple[str, str]:
    """(verdict, note) of a comparison once contention is weighed: `slower` / `faster` with either side
    contended becomes `ambiguous (contended)`, the note naming the side and its first reason."""
    sides = [(name, why) for name, row in (("base", base), ("new", new)) if (why := contention_reasons(row))]
    if verdict not in ("slower", "faster") or not sides:
        return verdict, note
    said = "; ".join(f"{name} contended: {why[0]}" for name, why in sides)
    return AMBIGUOUS_CONTENDED, f"{verdict} if the box had been quiet, but {said}; re-measure. {note}"
