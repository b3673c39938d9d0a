"""The spread rule kind (`[rule.spread]`): cases that differ only in one parameter (every GPU of a
run) within a fraction of the fastest."""

from __future__ import annotations

from typing import Any

from kvbench.analyze.case_verdict import (
    Verdict,
    above_peak_verdict,
    case_ids,
    case_name,
    matching,
    over_peak,
    unjudged,
)
from kvbench.analyze.accept.rules import Rule
from kvbench.analyze.runs import RunDocument
from kvbench.metadata import PER_GPU_GBPS


def judge_spread(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """Cases that differ only in `spread.over` (e.g. every GPU of a run) within `max` of the fastest."""
    over = rule.spread.over
    threshold = f"all within {rule.spread.max:.0%} of the fastest {over}"
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in matching(doc, rule.bench, rule.params):
        if r["status"] == "ok":
            key = (r.get("run_id"), tuple(sorted((k, str(v)) for k, v in r["params"].items() if k != over)))
            groups.setdefault(key, []).append(r)
    per_gpu = [r for r in matching(doc, rule.bench, {k: v for k, v in rule.params.items() if k != over})
               if r["status"] == "ok" and (r.get("metadata") or {}).get(PER_GPU_GBPS) and over == "gpu"]
    for r in per_gpu:  # one result of every GPU at once (gpus=all) carries the per-GPU rates
        groups[("all", r["case"] if "case" in r else id(r))] = [
            {"params": {**r["params"], over: key}, "gbps": {"median": rate}, "case": r.get("case")}
            for key, rate in r["metadata"][PER_GPU_GBPS].items()]
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        rates = {str(m["params"].get(over)): m["gbps"]["median"] for m in members}
        fastest = max(rates.values())
        slowest_key = min(rates, key=rates.__getitem__)
        shortfall = 1 - rates[slowest_key] / fastest
        case = f"{case_name(rule.bench, {k: v for k, v in members[0]['params'].items() if k != over})}: {over} " +             ", ".join(rates)
        if over_peak(*members):
            out.append(above_peak_verdict(rule, case, threshold, members))  # a spread measured against a bug's rate
            continue
        out.append(Verdict(rule.id, rule.bench, case, "PASS" if shortfall <= rule.spread.max else "FAIL",
                           f"{over}={slowest_key} {shortfall:.1%} below the fastest", threshold, rule.why,
                           cases=case_ids(*members), value=shortfall))
    if not out:
        ok = [r for r in matching(doc, rule.bench, rule.params) if r["status"] == "ok"]
        verdict, why = unjudged(doc, rule.bench, rule.params) if not ok else (
            "SKIP", f"fewer than two values of {over} in one run")
        # one GPU's cases ran but there is no second to compare: incomplete only where several are expected
        needs = ("multi-gpu",) if ok and over == "gpu" else ()
        out.append(Verdict(rule.id, rule.bench, case_name(rule.bench, rule.params), verdict, "-", threshold, why, needs))
    return out
