"""Benchmark parameters: declared once, parsed to a canonical form, hashed into a case id."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from kvbench.errors import BadInput
from kvbench.memory.kinds import parse_kind
from kvbench.units import parse_size


@dataclass(frozen=True)
class Param:
    """One parameter: `kind` is `size` (bytes), `int`, `text`, `address` (an IP literal), `memory` (a
    memory kind) or `choice`."""

    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    # A parameter added after results were first stored: at its default it is left out of a case's
    # identity, so the cases measured before it existed stay the same cases (history, compare).
    added: bool = False

    def parse(self, name: str, value: Any) -> Any:
        """The canonical value: sizes and ints as int, memory kinds and choices as str."""
        if self.kind == "size":
            out = parse_size(value, name)
        elif self.kind == "int":
            try:
                out = int(value)
            except (TypeError, ValueError):
                raise BadInput(f"bad {name}={value!r}: expected an integer") from None
        elif self.kind == "text":
            return str(value)
        elif self.kind == "address":  # an IP literal: what NIXL's and UCX's sockets take
            try:
                return str(ipaddress.ip_address(str(value).strip()))
            except ValueError:
                raise BadInput(f"bad {name}={value!r}: expected an IP address such as 127.0.0.1") from None
        elif self.kind == "memory":
            return str(parse_kind(str(value)))
        elif self.kind == "choice":
            out = str(value)
            if out not in self.choices:
                raise BadInput(f"bad {name}={value!r}: choose one of {', '.join(self.choices)}")
            return out
        else:  # pragma: no cover - a declaration bug
            raise TypeError(f"unknown param kind {self.kind}")
        if self.minimum is not None and out < self.minimum:
            raise BadInput(f"bad {name}={value!r}: must be at least {self.minimum}")
        if self.maximum is not None and out > self.maximum:
            raise BadInput(f"bad {name}={value!r}: must be at most {self.maximum}")
        return out


def coerce_text(value: str) -> Any:
    """A `--set` value from the command line: ints stay ints, everything else stays text."""
    try:
        return int(value)
    except ValueError:
        return value


def case_hash(bench_id: str, params: dict, specs: dict[str, Param] | None = None) -> str:
    """Identity of a case: sha256 of the bench id and its canonical params (first 16 hex digits),
    without the `added` parameters (per `specs`) that are at their default."""
    kept = {name: value for name, value in params.items()
            if not (specs and name in specs and specs[name].added and specs[name].parse(name, specs[name].default) == value)}
    blob = json.dumps({"bench": bench_id, "params": kept}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def format_params(params: dict[str, Any], specs: dict[str, Param] | None = None, skip_defaults: bool = False) -> str:
    """`size=256MiB threads=1 src=pageable`: sizes in binary units, one line."""
    from kvbench.units import format_size

    parts = []
    for name, value in params.items():
        spec = (specs or {}).get(name)
        if skip_defaults and spec is not None and spec.parse(name, spec.default) == value:
            continue
        text = format_size(value) if spec is not None and spec.kind == "size" and value else str(value)
        parts.append(f"{name}={text}")
    return " ".join(parts)
