"""Expanding sweeps into cases: cartesian product, excludes, `--set` overrides, canonical params."""

from __future__ import annotations

import difflib
import itertools
import math
from dataclasses import dataclass
from typing import Any

from kvbench.benches.describe import canonical_subset
from kvbench.benches.params import case_hash
from kvbench.benches.registry import get_bench
from kvbench.errors import BadInput
from kvbench.plan.suite import BenchSweep


@dataclass(frozen=True)
class Case:
    """One benchmark with one set of canonical parameters."""

    bench: str
    params: dict[str, Any]

    @property
    def case_hash(self) -> str:
        return case_hash(self.bench, self.params, get_bench(self.bench).params)


def _as_list(value: Any, name: str = "") -> list[Any]:
    """A sweep's values; `numa:*` stands for every NUMA node this host has, and `gpu = "*"` for
    every CUDA device (GPU 0 alone where CUDA is unavailable, so the case says why it skipped), and
    `pair = "*"` every ordered pair of them (gpu.p2p's matrix; "0-1" alone under two GPUs)."""
    values = list(value) if isinstance(value, list) else [value]
    out: list[Any] = []
    for v in values:
        if v == "numa:*":
            from kvbench.memory.numa import online_nodes

            out.extend(f"numa:{n}" for n in online_nodes())
        elif name == "gpu" and v == "*":
            from kvbench.backends.cuda import device_count

            out.extend(range(max(device_count(), 1)))
        elif name == "pair" and v == "*":
            from kvbench.backends.cuda import device_count
            from kvbench.benches.p2p import every_pair

            out.extend(every_pair(device_count()))
        else:
            out.append(v)
    return out


def expand(sweep: BenchSweep, overrides: dict[str, Any] | None = None) -> list[Case]:
    """Every combination of the sweep's list values, with overrides applied and excludes removed."""
    bench = get_bench(sweep.id)
    raw = dict(sweep.params)
    for name, value in (overrides or {}).items():
        if name in bench.params:
            raw[name] = value
    names = list(raw)
    excludes = [canonical_subset(sweep.id, e, strict=True) for e in sweep.exclude]
    cases: list[Case] = []
    seen: set[str] = set()
    for combo in itertools.product(*(_as_list(raw[n], n) for n in names)):
        params = bench.canonical_params(dict(zip(names, combo, strict=True)))
        if any(all(params[k] == v for k, v in ex.items()) for ex in excludes):
            continue
        bench.validate(params)
        case = Case(sweep.id, params)
        if case.case_hash not in seen:
            seen.add(case.case_hash)
            cases.append(case)
    return cases


MAX_CASES = 10_000  # more than this is a typo in a sweep, not a plan: refused unless the user insists


def combinations(sweep: BenchSweep, overrides: dict[str, Any] | None = None) -> int:
    """How many cases `sweep` expands to before excludes: counted, never built."""
    bench = get_bench(sweep.id)
    raw = {**sweep.params, **{k: v for k, v in (overrides or {}).items() if k in bench.params}}
    return math.prod(len(_as_list(value, name)) for name, value in raw.items())


def check_sweep(sweep: BenchSweep) -> None:
    """`BadInput` for a sweep naming an unknown benchmark or parameter, or a value that does not parse."""
    get_bench(sweep.id)
    for name, value in sweep.params.items():
        for v in _as_list(value, name):
            canonical_subset(sweep.id, {name: v}, strict=True)


def plan(sweeps: list[BenchSweep], only: list[str] | None = None, overrides: dict[str, Any] | None = None,
         max_cases: int = MAX_CASES, source: str | None = None) -> list[Case]:
    """Cases of the suite's sweeps, restricted to benchmarks in `only` (those not in the suite run
    with their defaults). An override that no selected benchmark takes is an error, and so is a
    selection of more than `max_cases` cases (counted before any is built). A fault in a sweep of
    the suite file `source` names the file and the sweep."""
    selected = [s for s in sweeps if not only or s.id in only]
    for number, sweep in enumerate(sweeps, 1):
        if sweep in selected and source is not None:
            try:
                check_sweep(sweep)
            except BadInput as exc:
                raise BadInput(f"suite {source}, [[bench]] {number} ({sweep.id}): {exc}") from None
    for bench_id in only or []:
        get_bench(bench_id)  # unknown ids fail here, with a suggestion
        if not any(s.id == bench_id for s in selected):
            selected.append(BenchSweep(id=bench_id))
    for name in overrides or {}:
        if not any(name in get_bench(s.id).params for s in selected):
            known = {p for s in selected for p in get_bench(s.id).params}
            close = difflib.get_close_matches(name, sorted(known), n=1)  # as a suite file's typo is answered
            hint = f"; did you mean '{close[0]}'?" if close else f" (they take: {', '.join(sorted(known))})"
            raise BadInput(f"--set {name}: no selected benchmark takes a parameter '{name}'{hint}")
    total = sum(combinations(sweep, overrides) for sweep in selected)
    if total > max_cases:
        raise BadInput(f"the selection expands to {total:,} cases, more than {max_cases:,}: narrow the sweep, or "
                       f"pass --max-cases {total} to run them all")
    return [case for sweep in selected for case in expand(sweep, overrides)]
