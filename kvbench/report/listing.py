"""`kvbench list` as tables, from the catalog's document (kvbench/catalog.py)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from kvbench.benches.describe import describe_params


def _here(reason: str | None) -> str:
    return "[green]available[/]" if not reason else f"[yellow]unavailable — {reason}[/]"


def listing_tables(doc: dict[str, Any]) -> list[Table]:
    def table(title: str, columns: tuple[str, ...]) -> Table:
        t = Table(title=title, title_justify="left")
        for col in columns:
            t.add_column(col, overflow="fold")
        return t

    benches = table("benchmarks", ("id", "description", "parameters (default)", "here"))
    for b in doc["benchmarks"]:
        defaults = {n: p["default"] for n, p in b["params"].items()}
        benches.add_row(b["id"], b["description"], describe_params(b["id"], defaults, skip_defaults=False),
                        _here(b["unavailable"]))
    executors = table("executors", ("name", "family", "description", "here"))
    for e in doc["executors"]:
        executors.add_row(e["name"], e["family"], e["description"], _here(e["unavailable"]))
    kinds = table("memory kinds", ("kind", "description", "here"))
    for k in doc["memory_kinds"]:
        kinds.add_row(k["name"], k["description"], _here(k["unavailable"]))
    suites = table("suites", ("name", "description", "benchmarks"))
    for s in doc["suites"]:
        suites.add_row(s["name"], s["description"], ", ".join(s["benchmarks"]))
    return [benches, executors, kinds, suites]
