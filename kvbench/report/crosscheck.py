"""Crosscheck tables: kvbench's figure, each peer tool's beside it, and their ratio."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kvbench.crosscheck.common import Figure


def render(console: Console, figures: tuple[Figure, list[Figure]],
           title: str = "dram.copy crosscheck (single thread, GB/s = 1e9 B/s)", goal: float | None = 0.95,
           goal_max: float | None = None, no_goal: str = "") -> None:
    """The table, then kvbench over the best comparable peer against `goal` (or `no_goal`: why none is set)."""
    ours, peers = figures
    table = Table(title=title, title_justify="left")
    for col in ("tool", "GB/s", "kvbench / tool", "note"):
        table.add_column(col, overflow="fold")
    table.add_row(ours.name, f"{ours.gbps:.2f}" if ours.gbps else "-", "", ours.note)
    for peer in peers:
        value = peer.ratio_to(ours)
        ratio = "-" if value is None else f"{value:.2f}" + (
            f" paired (p10–p90 {peer.paired['p10']:.2f}–{peer.paired['p90']:.2f})" if peer.paired else "")
        table.add_row(peer.name, f"{peer.gbps:.2f}" if peer.gbps else "-", ratio, peer.note)
    console.print(table)
    best = max((p for p in peers if p.gbps and p.comparable), key=lambda p: p.gbps, default=None)
    if best and ours.gbps:
        wanted = (f"no goal: {no_goal}" if goal is None else
                  f"goal ≥ {goal:.2f}" if goal_max is None else f"goal {goal:.2f}–{goal_max:.2f}")
        how = "paired" if best.paired else "rates divided"
        console.print(f"kvbench / best peer ({best.name}): {best.ratio_to(ours):.2f} ({how}; {wanted})")
