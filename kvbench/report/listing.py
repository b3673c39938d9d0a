"""`kvbench list` as tables, from the catalog's document (kvbench/plan/catalog.py)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from kvbench.benches.describe import describe_params
from kvbench.report.fit_table import FittedTable


def _here(reason: str | None) -> tuple[str, str]:
    """The `here` cell: available, or unavailable with its reason (a footnote where it is long)."""
    return ("[green]available[/]", "") if not reason else ("[yellow]unavailable[/]", escape(reason))


def listing_tables(doc: dict[str, Any]) -> list[FittedTable]:
    """Benchmarks, executors, memory kinds and suites: names never wrapped, reasons as footnotes."""
    benches = [[escape(b["id"]), escape(b["description"]),
                escape(describe_params(b["id"], {n: p["default"] for n, p in b["params"].items()}, skip_defaults=False)),
                _here(b["unavailable"])] for b in doc["benchmarks"]]
    executors = [[escape(e["name"]), escape(e["family"]), escape(e["description"]), _here(e["unavailable"])]
                 for e in doc["executors"]]
    kinds = [[escape(k["name"]), escape(k["description"]), _here(k["unavailable"])] for k in doc["memory_kinds"]]
    suites = [[escape(s["name"]), escape(s["description"]), escape(", ".join(s["benchmarks"]))] for s in doc["suites"]]
    return [FittedTable("benchmarks", [("id", "id"), ("description", "text"), ("parameters (default)", "text"),
                                       ("here", "note")], benches),
            FittedTable("executors", [("name", "id"), ("family", "id"), ("description", "text"), ("here", "note")],
                        executors),
            FittedTable("memory kinds", [("kind", "id"), ("description", "text"), ("here", "note")], kinds),
            FittedTable("suites", [("name", "id"), ("description", "text"), ("benchmarks", "text")], suites)]
