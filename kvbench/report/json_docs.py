"""The `--json` documents of the answering commands (accept, history, fleet, fleet --pairs, fit): plain JSON of
what their tables show, numbers in the units their keys name, times in ISO 8601 with their zone.
Shapes are documented in docs/json-outputs.md."""

from __future__ import annotations

import dataclasses
from typing import Any


def accept_doc(doc: dict[str, Any], verdicts: list[Any], overall: Any) -> dict[str, Any]:
    """`accept --json`: the overall verdict (word, reasons, exit status), the counts, every verdict as
    data — `value`, `limit`, `limit_max` numbers in `unit`, the cases it judged (`judged`: id, bench,
    params) and those of its benchmarks it did not (`not_judged`: the same and `why`)."""
    counts = {kind: sum(v.verdict == kind for v in verdicts) for kind in ("PASS", "FAIL", "SKIP", "INCOMPLETE")}
    by_case = {r["case"]: r for r in doc["results"] if r.get("case")}

    def case(case_id: str) -> dict[str, Any]:
        r = by_case.get(case_id) or {}
        return {"case": case_id, "bench": r.get("bench"), "params": r.get("params")}

    def data(v: Any) -> dict[str, Any]:
        row = {k: val for k, val in dataclasses.asdict(v).items() if k != "not_judged"}
        return {**row, "judged": [case(c) for c in v.cases],
                "not_judged": [{**case(c), "why": why} for c, why in v.not_judged]}

    return {"run": doc["run"]["id"], "host_id": doc["run"]["host_id"], **overall.to_json(), "counts": counts,
            "verdicts": [data(v) for v in verdicts]}


def history_doc(bench: str, series_by_case: list[tuple[list[dict[str, Any]], list[Any]]],
                verdicts: list[list[Any]] | None = None) -> dict[str, Any]:
    """Each case: its runs oldest first (run id, start, median GB/s, segment number from 1, and
    `compare`'s verdict and change from the run before, null for the first run of a context) and its
    level segments (first and last run, median GB/s)."""
    from kvbench.analyze.regress.history import contended

    cases = []
    for k, (series, segments) in enumerate(series_by_case):
        judged = verdicts[k] if verdicts else [None] * len(series)
        runs, levels = [], []
        for n, seg in enumerate(segments, start=1):
            members = series[seg.start:seg.end]
            levels.append({"segment": n, "first_run": members[0]["run_id"], "last_run": members[-1]["run_id"],
                           "median_gbps": seg.median})
            runs += [{"run_id": r["run_id"], "started_at": r["started_at"].isoformat(),
                      "gbps_median": r["gbps_median"], "segment": n,
                      "verdict": c.verdict if c else None, "change": c.change if c else None,
                      "allowance_ln": c.allowance_ln if c else None, "allowed_drop": c.allowed_drop if c else None,
                      "estimator": c.estimator if c else None, "judged_change": c.judged_change if c else None,
                      "contended": contended(r)}
                     for r, c in zip(members, judged[seg.start:seg.end], strict=True)]
        cases.append({"case": series[0]["case_hash"], "params": series[0]["params"], "runs": runs, "segments": levels})
    return {"bench": bench, "cases": cases}


def fleet_doc(rows: list[Any]) -> dict[str, Any]:
    return {"rows": [dataclasses.asdict(r) for r in rows], "outliers": sum(r.outlier for r in rows)}


def pairs_doc(matrices: list[Any]) -> dict[str, Any]:
    """`fleet --pairs --json`: each matrix (benchmark, pattern, measured params, run or null for the
    newest of each pair) with its hosts, median and robust spread in GB/s, the hosts in slow links
    (`slow_links` a count) and every directed pair as a cell: status ok | failed | skipped | missing,
    `gbps` null unless ok, `reason` for the others, `deviation` a fraction, `slow` a boolean."""
    return {"matrices": [{"bench": m.bench, "pattern": m.pattern, "params": m.params, "run_id": m.run_id,
                          "hosts": list(m.hosts), "median_gbps": m.median_gbps, "spread_gbps": m.spread_gbps,
                          "slow_links": sum(c.slow for c in m.cells),
                          "slow_hosts": [{"host": h, "slow_links": n} for h, n in m.slow_hosts],
                          "cells": [dataclasses.asdict(c) for c in m.cells]} for m in matrices]}


def fit_doc(run_id: int, fits: list[tuple[dict[str, Any], Any]]) -> dict[str, Any]:
    """Each series (its parameters but block_tokens) with α in µs per fragment and β in GB/s, or
    `fit: null` where it cannot be fitted; `poor` true where R² is below 0.9 (analyze/fit.POOR_R2)."""
    return {"run": run_id, "fits": [{"series": params, "fit": {**dataclasses.asdict(fit), "poor": fit.poor} if fit else None}
                                    for params, fit in fits]}


def plan_doc(answer: Any) -> dict[str, Any]:
    """`plan --json`: {"model", "tokens", "kv_bytes", "recompute": {"seconds", "flops", "tflops", "mfu", "tp",
    "source", "kind"} or null, "tiers": [{"tier", "kv_bytes", "restore_s", "measured_gbps", "strategy", "faster",
    "break_even_tokens", "peak_gbps", "peak_s", "request_ms", "runs", "note"}]}; `runs`: the runs the
    measured rate and the request time came from (`request_ms.run_id` the request's)."""
    return {"model": answer.model, "tokens": answer.tokens, "kv_bytes": answer.kv_bytes,
            "recompute": answer.recompute, **({"recompute_note": answer.recompute_note} if answer.recompute_note else {}),
            "tiers": [{"tier": t.tier, "kv_bytes": t.kv_bytes, "restore_s": t.measured_s,
                       "measured_gbps": t.measured_gbps, "strategy": t.strategy, "faster": t.faster,
                       "break_even_tokens": t.break_even_tokens, "peak_gbps": t.peak_gbps, "peak_s": t.peak_s,
                       "request_ms": t.request_ms, "runs": list(t.runs), "note": t.note} for t in answer.tiers]}


def policy_doc(found: list[Any], choices: list[Any] = ()) -> dict[str, Any]:
    """`policy --json`: {"policies": [{"path", "fragment_bytes": [lo, hi], "strategy", "gbps", "alpha_us",
    "beta_gbps", "tie_with", "sizes", "model", "layout", "host", "runs"}], "transports": [{"bench",
    "size_bytes", "between", "winner", "ratio", "p10", "p90", "mooncake_gbps", "nixl_gbps", "pairs", "run"}]}
    — gbps the strategy's lowest median over the range; one policy per path, model, layout and host; runs
    its figures came from; a transport's ratio is Mooncake / NIXL per pair of samples of one case."""
    return {"policies": [{**dataclasses.asdict(p), "fragment_bytes": list(p.fragment_bytes), "runs": list(p.runs)}
                         for p in found],
            "transports": [dataclasses.asdict(c) for c in choices]}
