"""The history a baseline export carries (issue 37: noise from the runs that exist).

A runner whose database does not survive between jobs compares each job with a baseline export
(`kvbench compare baseline.json latest`, docs/github-actions.md). Its fresh database holds no earlier
run, so every case fell back on the assumed allowance, and where the job was contended (a shared
runner: always) every drop beyond it was held back as `ambiguous (contended)`: INCOMPLETE on identical
code, job after job, although the baseline's `--repeat 3` runs had measured the case's noise. So an
export of a stored run carries `history`: each case's fast end (p90 GB/s) in its host's runs of that
context up to and including the exported run — the same figures `compare.case_history` reads from a
database — and `compare` uses it for a case its own database knows fewer than 3 runs of, when the
export comes from the new run's host and context (a history is a box's, never another's).
"""

from __future__ import annotations

import math
from typing import Any

from kvbench.analyze.regress.compare import case_history, fast_end
from kvbench.analyze.regress.noise import MIN_HISTORY
from kvbench.analyze.runs import RunDocument
from kvbench.errors import BadInput

WIDEST = 100.0  # no rate noise spreads a case's runs over more than this factor (a neighbour explains 8× at most)


def check_carried(base: RunDocument) -> None:
    """Refuse, in one line, a carried history no export of this kvbench writes (issue 57 item 3): one that
    does not hold the baseline's own fast end for a case it measured (an export's history ends with it), or
    whose runs spread over more than WIDEST× — `[1e308, 1e-308, 5.0]` made a median "level" that excused a −90 %
    drop."""
    carried = base.get("history") or {}
    own = {r["case"]: fast_end(r) for r in base.get("results") or []
           if r.get("status") == "ok" and r.get("gbps") and r["gbps"].get("median")}
    for case, rates in carried.items():
        where = f"run {base['run'].get('id')}'s 'history' for case {case}"
        if case in own and not any(math.isclose(g, own[case], rel_tol=1e-6) for g in rates):
            raise BadInput(f"{where} does not hold the baseline's own fast end ({own[case]:.4g} GB/s): it is not "
                           "this run's history; export the baseline again with kvbench export")
        if rates and max(rates) / min(rates) > WIDEST:
            raise BadInput(f"{where} spreads over {math.log10(max(rates) / min(rates)):.0f} orders of magnitude "
                           f"({min(rates):.3g}–{max(rates):.3g} GB/s), beyond any rate noise ({WIDEST:.0f}×): refused")


def exported_history(store: Any, doc: RunDocument) -> dict[str, list[float]]:
    """Each case's fast end (p90 GB/s) in `store`'s runs of `doc`'s host and context before it, then
    in `doc` itself (oldest first): what an export of `doc` carries. {} without a store."""
    if store is None:
        return {}
    history = case_history(store, doc)
    out = {case: list(history.get(case, [])) for case in dict.fromkeys(r["case"] for r in doc["results"])}
    for r in doc["results"]:
        if r["status"] == "ok" and r.get("gbps") and r["gbps"].get("median"):
            out[r["case"]].append(fast_end(r))
    return {case: rates for case, rates in out.items() if rates}


def with_carried(history: dict[str, list[float]], base: RunDocument, new: RunDocument) -> dict[str, list[float]]:
    """`history` (the database's, `case_history`), where a case has fewer than MIN_HISTORY runs in it,
    completed by the history `base` carries (an export's `history`) when that is longer and `base` was
    measured on the new run's host and context; the database's runs where they suffice."""
    carried = base.get("history") or {}
    if carried:
        check_carried(base)
    b, n = base["run"], new["run"]
    if not carried or (b.get("host_id"), b.get("context_id")) != (n.get("host_id"), n.get("context_id")):
        return history
    out = dict(history)
    for case, rates in carried.items():
        own = history.get(case, [])
        if len(own) < MIN_HISTORY and len(rates) > len(own):
            out[case] = list(rates)
    return out
