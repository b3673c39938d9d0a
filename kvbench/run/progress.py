"""Progress of a run on stderr: a live bar naming the case that is running on a terminal; one
line as each case starts and one as it ends in a log (CI, `tee`, a device call), so a long run
is never silent and a hang is located from the log."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from kvbench.metadata import CONTENTION
from kvbench.units import format_gbps


def outcome(result: Any) -> str:
    """`21.3 GB/s ok`, `skipped — reason`, `failed — reason` for a finished result."""
    if result.status == "ok":
        note = f" ({'; '.join(result.warnings)})" if result.warnings else ""
        return f"{format_gbps(result.gbps['median'])} GB/s ok{note}"
    return f"{result.status} — {result.reason}"


def _figure(result: Any) -> str:
    return f"{format_gbps(result.gbps['median'])} GB/s" if result.status == "ok" and result.gbps else result.status


def _load(result: Any) -> str | None:
    """`others used 75% of the CPUs` for a contended result, None for a clean one."""
    record = result.metadata.get(CONTENTION) or {}
    if not record.get("contended"):
        return None
    share = (record.get("host") or {}).get("others_cpu_fraction")
    return f"others used {share:.0%} of the CPUs" if share is not None else str(record["contended"][0])


class RunProgress:
    """`start(i, case)` and `done(result)` from the runner; use as a context manager around the run."""

    def __init__(self, console: Console, total: int, describe: Callable[[str, dict], str]) -> None:
        self.console, self.total, self.describe = console, total, describe
        self.live = console.is_terminal
        self._bar: Progress | None = None
        self._task = None
        self._index = 0
        self._started = 0.0

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                 console=self.console, transient=True)
            self._task = self._bar.add_task("kvbench run", total=self.total)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def _name(self, bench: str, params: dict) -> str:
        return f"{bench} {self.describe(bench, params)}"

    def grow(self, by: int = 1) -> None:
        """`by` more cases than planned (a cluster rank recording the pairs a dead rank left): the
        count shown never passes its total."""
        self.total += by
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def start(self, index: int, case: Any) -> None:
        self._index, self._started = index, time.monotonic()
        name = self._name(case.bench, case.params)
        if self._bar is not None:
            self._bar.update(self._task, description=f"running {name}"[:70])
        else:
            self.console.print(f"[{index + 1}/{self.total}] start {name}", markup=False, highlight=False, soft_wrap=True)

    def _say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def remeasuring(self, count: int, budget_s: float) -> None:
        """The run's contended cases are measured once more (runner.execute): said before, so the table's
        figures are never a surprise after the live lines."""
        self._say(f"re-measuring {count} contended case(s), at most {budget_s:.0f} s…")

    def remeasured(self, case: Any, kept: Any, other: Any | None) -> None:
        """One line per contended case: the figure the run keeps (the table's) and why."""
        name = self._name(case.bench, case.params)
        figure = outcome(kept).split(" (")[0] if kept.status == "ok" else outcome(kept)
        if other is None:
            why = "as first measured, contended: the re-measure budget was spent"
        elif (kept.metadata.get("remeasured") or {}).get("kept") == "again":
            load = _load(kept)
            why = (f"measured again {'on a quiet box' if load is None else f'less contended ({load})'}; "
                   f"the first, {_figure(other)}, was contended ({_load(other) or 'busy'})")
        else:
            why = (f"the first measurement: measured again at {_figure(other)}, "
                   f"{'failed' if other.status != 'ok' else 'as contended'} ({_load(other) or other.reason or 'busy'})")
        self._say(f"re-measured {name}: kept {figure} — {why}")

    def done(self, result: Any) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1)
            return
        seconds = time.monotonic() - self._started
        self.console.print(f"[{self._index + 1}/{self.total}] {self._name(result.bench, result.params)}: "
                           f"{outcome(result)} ({seconds:.1f} s)", markup=False, highlight=False, soft_wrap=True)
