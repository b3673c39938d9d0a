"""`kvbench doctor`'s table and its JSON document."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.table import Table

from kvbench.hardware.doctor import Finding, verdict

_STYLE = {"ok": "green", "fix": "red", "advice": "yellow", "n/a": "dim"}


def doctor_table(findings: list[Finding]) -> Table:
    table = Table(title="before an acceptance run (fix: bends the numbers; advice: adds run-to-run variance)")
    for column in ("check", "state", "seen", "what to do / why not read"):
        table.add_column(column, overflow="fold")
    for f in findings:
        table.add_row(f.check, f"[{_STYLE[f.state]}]{f.state}[/]", f.seen, f.todo)
    return table


def doctor_doc(findings: list[Finding]) -> dict[str, Any]:
    """`doctor --json`: the verdict (word, reasons, exit status) and every check's finding."""
    return {**verdict(findings).to_json(), "checks": [dataclasses.asdict(f) for f in findings]}
