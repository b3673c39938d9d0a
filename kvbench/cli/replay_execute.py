"""`kvbench replay --execute N`: the window's restores run as a `kv.replay` run in the database, then
held against their projection (kvbench/analyze/decide/replay/executed.py)."""

from __future__ import annotations

from typing import Any

from kvbench.cli.common import err
from kvbench.errors import BadInput


def destination(asked: str, into: str, source: str) -> str:
    """Where the window's restores end: `hbm` or `dram`. `auto`: HBM where restores are priced into the GPU
    (--into gpu) and this host has CUDA, else the DRAM gather this box can run."""
    if asked not in ("auto", "hbm", "dram"):
        raise BadInput(f"bad --execute-into {asked}: auto, hbm or dram")
    if asked == "hbm" and source == "file":
        raise BadInput("--execute-from file with --execute-into hbm: kv.replay reads a file pool into DRAM only; "
                       "give --execute-into dram")
    if asked != "auto":
        return asked
    from kvbench.benches.kv.replay_gpu import cuda_reason

    return "hbm" if into == "gpu" and source != "file" and cuda_reason() is None else "dram"


def execute_window(trace: Any, model: str, setting: Any, rows: list[dict[str, Any]], requests: int, start: int,
                   db: str | None, source: str = "dram", into: str = "dram") -> dict[str, Any]:
    """The window run as a kv.replay run into `into` (hbm | dram) and held against its projection; a case
    this host cannot run (no CUDA for hbm) comes back as {status: skipped, reason, run_id}."""
    from kvbench.analyze.decide.replay.executed import compare
    from kvbench.analyze.decide.replay.pricing import tier_prices
    from kvbench.run.suite_run import RunRequest, run_suite

    from kvbench.benches.kv.replay_gpu import default_strategy

    tier = "nvme" if source == "file" else "dram"
    hbm = into == "hbm"
    legs = tier_prices([tier], rows, setting.model, "gpu" if hbm else "dram")[0].restore  # priced before the bytes move
    overrides = {"trace": trace.path, "trace_block_tokens": trace.block_tokens, "model": model,
                 "dtype": setting.dtype, "tp": setting.tp, "block_tokens": setting.engine_block_tokens,
                 "requests": requests, "start": start,
                 "src": "file" if source == "file" else "pinned" if hbm else "pageable",
                 "dst": "device" if hbm else "pageable", "strategy": default_strategy() if hbm else "host"}
    err.print(f"executing requests {start}..{start + requests - 1} of the trace as a kv.replay run "
              f"({'pinned DRAM → HBM' if hbm else 'file → DRAM' if source == 'file' else 'DRAM → DRAM'})")
    outcome = run_suite(RunRequest(benches=("kv.replay",), overrides=overrides, db=db, samples=5), err)
    row = next((r for r in outcome.store.results(outcome.run_id) if r["bench"] == "kv.replay"), None)
    if row is None:
        raise BadInput(f"run {outcome.run_id} stored no kv.replay result")
    if row["status"] == "skipped":
        err.print(f"--execute: kv.replay skipped on this host: {row.get('reason')}", markup=False, highlight=False)
        return {"run_id": row.get("run_id"), "result_id": row.get("id"), "status": "skipped",
                "reason": row.get("reason")}
    try:
        return compare(row, legs, setting.model, setting.dtype, setting.tp, setting.engine_block_tokens)
    except ValueError as e:
        raise BadInput(f"--execute: {e}") from None
