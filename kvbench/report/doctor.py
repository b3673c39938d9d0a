"""`kvbench doctor`'s table and its JSON document."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.table import Table

from kvbench.hardware.doctor import Finding, needs_fixing

_STYLE = {"ok": "green", "fix": "red", "advice": "yellow", "n/a": "dim"}


def doctor_table(findings: list[Finding]) -> Table:
    table = Table(title="before an acceptance run (fix: bends the numbers; advice: adds run-to-run variance)")
    for column in ("check", "state", "seen", "what to do / why not read"):
        table.add_column(column, overflow="fold")
    for f in findings:
        table.add_row(f.check, f"[{_STYLE[f.state]}]{f.state}[/]", f.seen, f.todo)
    return table


def verdict_line(findings: list[Finding]) -> str:
    """PASS when nothing needs fixing, FAIL naming what does."""
    fix = needs_fixing(findings)
    if not fix:
        return "PASS: nothing to fix before an acceptance run"
    return f"FAIL: {len(fix)} thing(s) to fix before an acceptance run: {', '.join(f.check for f in fix)}"


def doctor_doc(findings: list[Finding]) -> dict[str, Any]:
    return {"verdict": "FAIL" if needs_fixing(findings) else "PASS",
            "checks": [dataclasses.asdict(f) for f in findings]}
