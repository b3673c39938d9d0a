"""Expanding sweeps into cases: cartesian product, excludes, `--set` overrides, canonical params."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from kvbench.benches.params import case_hash
from kvbench.benches.registry import get_bench
from kvbench.errors import BadInput
from kvbench.plan.suite import BenchSweep
from kvbench.plan.sweep import Sweep


@dataclass(frozen=True)
class Case:
    """One benchmark with one set of canonical parameters."""

    bench: str
    params: dict[str, Any]

    @property
    def case_hash(self) -> str:
        return case_hash(self.bench, self.params, get_bench(self.bench).params)


def expand(sweep: BenchSweep, overrides: dict[str, Any] | None = None) -> list[Case]:
    """Every combination of the sweep's list values, with overrides applied and excludes removed."""
    return [Case(sweep.id, params) for params, _ in Sweep.of(sweep).expand(overrides)]


MAX_CASES = 10_000  # more than this is a typo in a sweep, not a plan: refused unless the user insists


def combinations(sweep: BenchSweep, overrides: dict[str, Any] | None = None) -> int:
    """How many cases `sweep` expands to before excludes: counted, never built."""
    return Sweep.of(sweep).combinations(overrides)


def check_sweep(sweep: BenchSweep) -> None:
    """`BadInput` for a sweep naming an unknown benchmark or parameter, or a value that does not parse."""
    Sweep.of(sweep).check()


def plan(sweeps: list[BenchSweep], only: list[str] | None = None, overrides: dict[str, Any] | None = None,
         max_cases: int = MAX_CASES, source: str | None = None) -> list[Case]:
    """Cases of the suite's sweeps, restricted to benchmarks in `only` (those not in the suite run
    with their defaults). An override that no selected benchmark takes is an error, and so is a
    selection of more than `max_cases` cases (counted before any is built). A fault in a sweep of
    the suite file `source` names the file and the sweep. Each selected sweep's benchmark is looked
    up once (`Sweep.of`), and everything after works on it."""
    chosen = [s for s in sweeps if not only or s.id in only]
    selected: list[Sweep] = []
    for number, spec in enumerate(sweeps, 1):
        if spec not in chosen:
            continue
        try:
            sweep = Sweep.of(spec)
            if source is not None:
                sweep.check()
        except BadInput as exc:
            if source is None:
                raise
            raise BadInput(f"suite {source}, [[bench]] {number} ({spec.id}): {exc}") from None
        selected.append(sweep)
    for bench_id in only or []:
        if not any(s.spec.id == bench_id for s in selected):
            selected.append(Sweep.of(BenchSweep(id=bench_id)))  # unknown ids fail here, with a suggestion
    for name in overrides or {}:
        if not any(s.takes(name) for s in selected):
            known = {p for s in selected for p in s.bench.params}
            close = difflib.get_close_matches(name, sorted(known), n=1)  # as a suite file's typo is answered
            hint = f"; did you mean '{close[0]}'?" if close else f" (they take: {', '.join(sorted(known))})"
            raise BadInput(f"--set {name}: no selected benchmark takes a parameter '{name}'{hint}")
    total = sum(sweep.combinations(overrides) for sweep in selected)
    if total > max_cases:
        raise BadInput(f"the selection expands to {total:,} cases, more than {max_cases:,}: narrow the sweep, or "
                       f"pass --max-cases {total} to run them all")
    return [Case(sweep.spec.id, params) for sweep in selected for params, _ in sweep.expand(overrides)]
