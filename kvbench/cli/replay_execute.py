"""`kvbench replay --execute N`: the window's restores run as a `kv.replay` run in the database, then
held against their projection (kvbench/analyze/decide/replay/executed.py)."""

from __future__ import annotations

from typing import Any

from kvbench.cli.common import err
from kvbench.errors import BadInput


def execute_window(trace: Any, model: str, setting: Any, rows: list[dict[str, Any]], requests: int, start: int,
                   db: str | None, source: str = "dram") -> dict[str, Any]:
    from kvbench.analyze.decide.replay.executed import compare
    from kvbench.analyze.decide.replay.pricing import tier_prices
    from kvbench.run.suite_run import RunRequest, run_suite

    tier = "nvme" if source == "file" else "dram"
    legs = tier_prices([tier], rows, setting.model, "dram")[0].restore  # priced before the bytes move
    overrides = {"trace": trace.path, "trace_block_tokens": trace.block_tokens, "model": model,
                 "dtype": setting.dtype, "tp": setting.tp, "block_tokens": setting.engine_block_tokens,
                 "requests": requests, "start": start, "src": "file" if source == "file" else "pageable"}
    err.print(f"executing requests {start}..{start + requests - 1} of the trace as a kv.replay run")
    outcome = run_suite(RunRequest(benches=("kv.replay",), overrides=overrides, db=db, samples=5), err)
    row = next((r for r in outcome.store.results(outcome.run_id) if r["bench"] == "kv.replay"), None)
    if row is None:
        raise BadInput(f"run {outcome.run_id} stored no kv.replay result")
    try:
        return compare(row, legs, setting.model, setting.dtype, setting.tp, setting.engine_block_tokens)
    except ValueError as e:
        raise BadInput(f"--execute: {e}") from None
