"""The link matrix in the terminal: sources down, destinations across, each cell the pair's median
GB/s (slow ones marked), FAILED / skipped / missing where there is no rate — their reasons listed
below, never a 0. Laid out for the terminal's width (report/fit_table.py): rates never wrapped."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from kvbench.benches.describe import describe_params
from kvbench.report.fit_table import FittedTable
from kvbench.units import format_gbps

_WORD = {"failed": "[bold red]FAILED[/]", "skipped": "[yellow]skipped[/]", "missing": "[dim]missing[/]"}


# what a matrix's cells can show: (the cell's field, the unit in the title, how a value is written)
SHOWN = {"gbps": ("gbps", "GB/s (1e9 B/s)", format_gbps),
         "fraction": ("wire_fraction", "fraction of the wire ceiling (the same bytes as one descriptor)",
                      lambda v: f"{v:.2f}"),
         "p50": ("request_p50_ms", "p50 ms per request of a burst", lambda v: f"{v:.3g}"),
         "p99": ("request_p99_ms", "p99 ms per request of a burst", lambda v: f"{v:.3g}")}


def _shown(cell: Any, show: str = "gbps") -> str:
    if cell is None:
        return ""
    if cell.status != "ok":
        return _WORD.get(cell.status, escape(cell.status))
    field, _, written = SHOWN[show]
    value = getattr(cell, field)
    if value is None:
        return "[dim]n/a[/]"  # an ok pair that measured no such value (not a burst)
    rate = written(value)
    return f"[bold red]{rate} SLOW[/]" if cell.slow else rate


def matrix_title(m: Any, show: str = "gbps") -> str:
    where = ((m.run_id if isinstance(m.run_id, str) else f"run {m.run_id}") if m.run_id is not None
             else "newest result of each pair")
    pattern = f" · pattern {m.pattern}" if m.pattern else ""
    return escape(f"{m.bench} {describe_params(m.bench, m.params)}{pattern} · {where} · {SHOWN[show][1]}, "
                  "source ↓ destination →")


def link_table(m: Any, show: str = "gbps") -> FittedTable:
    rows = [[escape(src), *("·" if src == dst and m.cell(src, dst) is None else _shown(m.cell(src, dst), show)
                            for dst in m.hosts)] for src in m.hosts]
    return FittedTable(matrix_title(m, show), [("src \\ dst", "id"), *((escape(h), "number") for h in m.hosts)], rows)


def link_notes(m: Any) -> list[str]:
    """The lines under a matrix (plain text): its median and spread, the slow links, the hosts most
    often in them, and every pair without a rate with its reason."""
    lines = []
    if m.median_gbps is not None:
        lines.append(f"median {format_gbps(m.median_gbps)} GB/s, robust spread ±{format_gbps(m.spread_gbps)} GB/s "
                     f"over {sum(c.status == 'ok' for c in m.cells)} ok pair(s)")
    slow = [c for c in m.cells if c.slow]
    lines.append(f"{len(slow)} slow link(s)" + (": " + ", ".join(
        f"{c.src_host} → {c.dst_host} {format_gbps(c.gbps)} GB/s ({c.deviation:+.0%})" for c in slow) if slow else ""))
    if m.slow_hosts:
        top = m.slow_hosts[0][1]
        lines.append("most often in slow links: " + ", ".join(f"{h} ({n} of {len(slow)})"
                                                               for h, n in m.slow_hosts if n == top))
    lines += [f"{c.src_host} → {c.dst_host}: {c.status}: {c.reason}" for c in m.cells if c.status != "ok"]
    return lines
