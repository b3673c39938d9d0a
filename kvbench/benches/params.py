"""Benchmark parameters: declared once, parsed to a canonical form, hashed into a case id."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import socket
from dataclasses import dataclass
from typing import Any

from kvbench.errors import BadInput
from kvbench.memory.kind_names import parse_kind
from kvbench.units import COUNT_FORM, parse_count, parse_size


def resolve_address(value: str, label: str) -> str:
    """`value` as the IP address NIXL's and UCX's sockets take (they take no host names): an IP
    address as is, a host name resolved here (what `scontrol show hostnames` and MASTER_ADDR give);
    `label` names the input in the one-line error."""
    text = value.strip()
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    # digits and dots, or a colon, meant an IP address: never asked of the resolver as a name
    if not text or any(c.isspace() for c in text) or ":" in text or not text.strip("0123456789."):
        raise BadInput(f"bad {label}: expected an IP address such as 127.0.0.1 or a host name")
    try:
        found = socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise BadInput(f"bad {label}: expected an IP address or a host name that resolves; this one does not "
                       f"({getattr(exc, 'strerror', None) or exc})") from None
    ipv4 = [info[4][0] for info in found if info[0] == socket.AF_INET]
    return ipv4[0] if ipv4 else str(found[0][4][0])


@dataclass(frozen=True)
class Param:
    """One parameter: `kind` is `size` (bytes), `int`, `text`, `address` (an IP address, a host name
    resolved to one), `memory` (a memory kind) or `choice`."""

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
            if isinstance(value, str):  # `--set tokens=8k` as the CLI's --tokens takes it
                try:
                    out = parse_count(value, name)
                except BadInput:
                    raise BadInput(f"bad {name}={value!r}: give {COUNT_FORM}") from None
            else:
                try:
                    out = int(value)
                except (TypeError, ValueError):
                    raise BadInput(f"bad {name}={value!r}: expected an integer") from None
        elif self.kind == "text":
            return str(value)
        elif self.kind == "address":
            return resolve_address(str(value), f"{name}={value!r}")
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


# memory.pages.PAGES and DEFAULT_PAGES, written out: importing the memory package loads numpy, which
# read-only commands must not pay for (tests/test_runner_pages.py holds the two equal)
PAGES = ("base", "thp", "hugetlb-2M", "hugetlb-1G")
PAGES_PARAM = Param(
    "choice", "base", "page size of every host buffer: base (4 KiB, the default: what engines' KV pools "
    "get on a stock kernel), thp (MADV_HUGEPAGE), hugetlb-2M, hugetlb-1G (the hugetlb pool); the fraction "
    "huge pages back is recorded per buffer", choices=PAGES, added=True)


def with_pages(params: dict[str, Param]) -> dict[str, Param]:
    """`params` plus `pages` when the benchmark takes host memory (a `memory` parameter) and does not
    declare `pages` itself: every host buffer has a page size, and a case at another one is another case."""
    if "pages" in params or not any(p.kind == "memory" for p in params.values()):
        return params
    return {**params, "pages": PAGES_PARAM}


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
