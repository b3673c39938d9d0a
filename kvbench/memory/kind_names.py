"""Memory kinds by name alone (`pageable`, `numa:N`, `pinned`, `device`, `file`, `remote`): the text a
benchmark parameter takes, parsed without the allocators. `kinds.py` adds what each kind is and
how to allocate it; parsing a parameter (describing a stored result) needs neither, nor numpy."""

from __future__ import annotations

from dataclasses import dataclass

from kvbench.errors import BadInput, unknown_name

# name → whether it takes an index (numa:N, device:N); kinds.py's table holds the same names
TAKES_INDEX = {"pageable": False, "numa": True, "pinned": False, "device": True, "file": False, "remote": False}


@dataclass(frozen=True)
class MemoryKind:
    """A parsed kind: `name` plus an optional integer argument (`numa:1` → ("numa", 1))."""

    name: str
    index: int | None = None

    def __str__(self) -> str:
        return self.name if self.index is None else f"{self.name}:{self.index}"


def parse_kind(text: str) -> MemoryKind:
    """`"numa:1"` → MemoryKind("numa", 1); raises `BadInput` naming the text."""
    name, _, arg = str(text).partition(":")
    if name not in TAKES_INDEX:
        raise unknown_name("memory kind", name, TAKES_INDEX)
    if not arg:
        if name == "numa":
            raise BadInput("bad memory 'numa': name the node, e.g. numa:0")
        return MemoryKind(name)
    if not TAKES_INDEX[name] or not arg.isdigit():
        raise BadInput(f"bad memory '{text}': '{name}' takes {'a node/GPU number' if TAKES_INDEX[name] else 'no argument'}")
    return MemoryKind(name, int(arg))
