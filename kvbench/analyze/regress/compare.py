"""Comparing two runs case by case, with verdicts a CI can trust: faster, slower, same or ambiguous,
each with its evidence (nvbench's robust compare, asv's between-run noise). A significance test on one
run's samples would only measure within-run noise, so none is used. `compare`, `report --baseline`,
`history` and the dashboard export all judge a pair of runs here (`compare_case`), so they agree.

One run's samples show only the noise *within* that run; back-to-back runs of one case differ by
much more (up to ~15 % on a shared VM, while each run's own spread is ~2 %). So a verdict weighs a
change against the case's *between-run* noise: the spread of its fast end (p90 GB/s) over earlier runs
on the same host and context (at least 3 of them, contended or not: on a box that is always busy the
runs that exist still give the noise; the fast end is what a neighbour disturbs least), or, where that
history is missing, an assumed allowance (ln 0.15: a drop beyond −13.9 % gates). The noise is never
below the spread the runs actually showed: their range divided by the range a normal sample of that
size spans (d2: 1.69 sd for 3 runs, 2.06 for 4), and from 5 runs on the larger of that and the MAD's
robust sd. Changes are sized as |ln(new / base)|, so a halving weighs as a doubling and a drop can
always exceed an allowance; every output states the allowance as the drop it lets pass
(`noise.allowance_words`). A change is judged on the medians (the headline), except where the side
whose contention could fake it was contended (the new run for a drop, the base for a rise: contention
only slows): then on the fast end (kvbench/analyze/regress/contended.py). A case is

* `same`      — the judged change is under the practical floor (5 % by default);
* `slower` / `faster` — the two runs' ranges (p10–p90; median–p90 on the fast end) do not overlap,
  the change exceeds the floor, and it exceeds 3 sd of the change between two runs: each run varies
  by the between-run noise, so their difference by √2 × it (√1.449 from the median of a 3-run baseline:
  analyze/regress/pooled.py; the allowance, 3 × √2 × the noise, the
  noise taken at its 80 % upper confidence bound for the runs it came from: noise.noise_upper_factor).
  Measured with benchmarks/compare_power.py on a quiet 2-vCPU VM (33 identical pairs of a 6-case
  suite): 1 of 33 pairs falsely `slower` and 99 % of 40 % drops caught. The allowance never exceeds
  a halving (ln 2); a case whose runs put it beyond that is
* `too noisy` — its runs vary so much that neither a drop of the threshold's size nor a halving could be
  seen: neither slower nor same (issue 57 item 0); only a change beyond the noise's own, uncapped allowance
  or beyond the 8× no neighbour explains is still `slower` / `faster`;
* `ambiguous` — anything between: beyond the floor, but within the ranges' overlap or within what
  the case's runs vary by anyway. Not gated, but a drop so left is not seen either: `compare` ends
  INCOMPLETE on it (analyze/regress/outcome.py), never a PASS.
* `ambiguous (contended)` — `slower` or `faster` on the fast end, but the faking side was more
  contended than the other and the change is within what that contention plausibly causes (with
  `require_quiet`: any change with a contended side). Shown, not gated: re-measure.

`slower` fails CI, and so do `missing` (a case the base had and the new run lacks), `failed`
(the new run's case failed, e.g. its bytes did not verify) and `lost` (ok in the base, skipped in
the new run: a GPU whose driver broke must not pass on silence); `not-ok` (a case skipped in both
runs, or not ok in the base) and `new` (a case the base lacks) are shown, not gated. Identical
back-to-back runs therefore pass; a drop whose ranges do not overlap and that exceeds the
between-run noise fails.

Two runs are the same run only when their id, host and start time agree: run 7 of one CI job's fresh
database and run 7 of another's are two runs.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

from kvbench.analyze.regress.contended import (
    AMBIGUOUS_CONTENDED,
    MOST_EXPLAINED,
    contention_reasons,
    faking_side,
    weigh_contention,
)
from kvbench.analyze.regress.noise import (
    MIN_HISTORY,
    THRESHOLD,
    allowed_drop,
    back_to_level,
    case_allowance,
)
from kvbench.analyze.runs import RunDocument
from kvbench.benches.describe import describe_params
from kvbench.errors import BadInput
from kvbench.store.records import RunRecord

GATING = ("slower", "missing", "failed", "lost")
TOO_NOISY = "too noisy"  # the case's runs vary beyond a halving: neither slower nor same can be said here (item 0)
TOO_NOISY_ADVICE = ("re-measure (compare --measure-again), make the baseline with run --repeat 3, or judge on a "
                    "quieter box")
MEDIAN, FAST_END = "median", "fast end (p90)"  # the estimators a verdict may use (Comparison.estimator)


@dataclass(frozen=True)
class Comparison:
    bench: str
    params: dict[str, Any]
    case: str
    base_gbps: float | None
    new_gbps: float | None
    change: float | None  # new / base - 1 of the median rates
    verdict: str  # faster | slower | same | ambiguous | ambiguous (contended) | new | missing | failed | lost | not-ok
    note: str = ""  # the evidence, in words
    base_range: tuple[float, float] | None = None  # p10–p90 GB/s
    new_range: tuple[float, float] | None = None
    between_run: float | None = None  # relative between-run noise of the fast end (1 robust sd); None: assumed
    history_runs: int = 0
    allowance_ln: float | None = None  # the |ln(new / base)| above which the case is slower or faster
    estimator: str | None = None  # what the verdict judged: MEDIAN, or FAST_END where contention could fake the change
    judged_change: float | None = None  # new / base - 1 of that estimator
    base_runs: list[int] | None = None  # the runs whose median the base's rates are (a --repeat baseline), None: one run
    allowance: str | None = None  # the allowance as every output states it, naming its base (noise.Allowance.words)

    @property
    def allowed_drop(self) -> float | None:
        """The drop the allowance lets pass, as a fraction (0.5: a drop beyond −50 % gates)."""
        return allowed_drop(self.allowance_ln) if self.allowance_ln is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "allowed_drop": self.allowed_drop}


def same_run(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two run records are one run: id, host and start time agree (a run id alone repeats
    across databases, e.g. a CI job's fresh database and the baseline export of another's)."""
    return all(a.get(k) == b.get(k) for k in ("id", "host_id", "started_at"))


def check_comparable(base: RunDocument, new: RunDocument, cross_host: bool = False,
                     one_box: Collection[str] = ()) -> None:
    """Refuse a run compared with itself, and runs from different hosts or contexts unless asked;
    `one_box`: host ids known to be one box (its id and an older kvbench's, not merged yet)."""
    b, n = base["run"], new["run"]
    if {b["host_id"], n["host_id"]} <= set(one_box):
        b = {**b, "host_id": n["host_id"]}
    if same_run(b, n):
        raise BadInput(f"run {b['id']} compared with itself: name two different runs (where one is 'baseline', "
                       "tag another run: kvbench tag RUN baseline)")
    if b["host_id"] != n["host_id"] and not cross_host:
        raise BadInput(f"runs {b['id']} and {n['id']} come from different hosts ({b['host_id'][:12]}… vs "
                       f"{n['host_id'][:12]}…): a regression needs the same box; pass --cross-host to compare anyway")
    if b["context_id"] != n["context_id"] and not cross_host:
        raise BadInput(f"runs {b['id']} and {n['id']} have different contexts (driver, CUDA, library versions): "
                       f"that starts a new history; pass --cross-host to compare anyway")


def differences(base: RunDocument, new: RunDocument) -> list[str]:
    """What differs between two runs' boxes and software, in words (empty when host and context are
    the same): what a report across a driver upgrade states above its comparison."""
    out = []
    b, n = base["run"], new["run"]
    if b["host_id"] != n["host_id"]:
        names = [((d.get("host") or {}).get("hostname") or d["run"]["host_id"][:12]) for d in (base, new)]
        out.append(f"host: {names[0]} → {names[1]}")
    if b["context_id"] != n["context_id"]:
        old, now = ((d.get("context") or {}).get("facts") or {} for d in (base, new))
        changed = [f"{key}: {old.get(key, '—')} → {now.get(key, '—')}" for key in sorted(set(old) | set(now))
                   if old.get(key) != now.get(key)]
        out += changed or ["software context differs (details not in these runs' documents)"]
    return out


def _range(result: dict[str, Any]) -> tuple[float, float]:
    g = result["gbps"]
    return float(g.get("p10") or g["median"]), float(g.get("p90") or g["median"])


def fast_end(result: dict[str, Any]) -> float:
    """A result's fast end, GB/s: the p90 of its sample rates, which a busy neighbour cannot lift
    (contention only slows a sample); its median where no p90 was recorded."""
    g = result["gbps"]
    return float(g.get("p90") or g["median"])


def _upper_range(result: dict[str, Any]) -> tuple[float, float]:
    """The median-to-p90 range, GB/s: the samples a neighbour slowed least."""
    g = result["gbps"]
    return float(g["median"]), fast_end(result)


def _apart(base: dict[str, Any], new: dict[str, Any], estimator: str = MEDIAN) -> tuple[bool, str]:
    """Whether the two sides' ranges do not overlap, and the evidence in words: p10–p90 for a verdict
    on the median, median–p90 for one on the fast end (a contended side's slow samples say only that
    the box was busy)."""
    ranged = _range if estimator == MEDIAN else _upper_range
    b_range, n_range = ranged(base), ranged(new)
    apart = n_range[1] < b_range[0] or n_range[0] > b_range[1]
    name = "p10–p90" if estimator == MEDIAN else "median–p90"
    return apart, (f"{name} new {n_range[0]:.3g}–{n_range[1]:.3g} vs base {b_range[0]:.3g}–{b_range[1]:.3g} GB/s "
                   f"({'apart' if apart else 'overlapping'})")


def compare_case(base: dict[str, Any], new: dict[str, Any], threshold: float = THRESHOLD,
                 history: list[float] | None = None, require_quiet: bool = False) -> Comparison:
    """The verdict on one case; `history` holds the case's fast end (p90 GB/s) in earlier runs of
    the same host and context, contended or not (`case_history`), which gives its between-run noise.
    The change is judged on the median unless the side whose contention could fake it (the new run
    for a drop, the base for a rise) was contended: then on the fast end (`require_quiet`: always the
    median, and any change with a contended side is held back)."""
    head = {"bench": new["bench"], "params": new["params"], "case": new["case"]}
    if new["status"] == "failed":  # a transfer that did not verify is never a pass, whatever the base was
        return Comparison(**head, base_gbps=None, new_gbps=None, change=None, verdict="failed",
                          note=f"base {base['status']}, new failed: {new.get('reason') or 'no reason recorded'}")
    if base["status"] == "ok" and new["status"] != "ok":  # what went away is a regression, never silence
        return Comparison(**head, base_gbps=base["gbps"]["median"], new_gbps=None, change=None, verdict="lost",
                          note=f"ok in base, {new['status']} in new: {new.get('reason') or 'no reason recorded'}")
    if base["status"] != "ok" or new["status"] != "ok":
        return Comparison(**head, base_gbps=None, new_gbps=None, change=None, verdict="not-ok",
                          note=f"base {base['status']}, new {new['status']}")
    history = history or []
    b_rate, n_rate = base["gbps"]["median"], new["gbps"]["median"]
    change = n_rate / b_rate - 1
    faker = new if faking_side(change) == "new" else base
    estimator = FAST_END if contention_reasons(faker) and not require_quiet else MEDIAN
    b_value, n_value = (b_rate, n_rate) if estimator == MEDIAN else (fast_end(base), fast_end(new))
    judged = n_value / b_value - 1
    size = abs(math.log(n_value / b_value)) if n_value > 0 else math.inf  # a halving weighs as a doubling
    apart, ranges = _apart(base, new, estimator)
    pooled = base.get("pooled_runs") or []  # the base is the median of its --repeat batch (analyze/regress/pooled.py)
    allowed_by = case_allowance(history, threshold, max(len(pooled), 1))
    noise, allowed = allowed_by.noise, allowed_by.ln
    basis = (f"fast end's between-run noise ±{noise:.1%} over {len(history)} runs" if noise is not None else
             f"fewer than {MIN_HISTORY} earlier runs: noise assumed")
    if len(pooled) > 1:
        basis += f"; base: the median of {len(pooled)} runs of its --repeat ({', '.join(map(str, pooled))})"
    returned = back_to_level(fast_end(new), judged, history, allowed)
    # beyond a halving the noise hides any drop of the threshold's size: only a change beyond the noise's own
    # allowance (or beyond the 8× no neighbour explains) is judged; else the case is too noisy to judge here
    beyond = apart and size >= min(allowed_by.uncapped_ln, math.log(MOST_EXPLAINED))
    if allowed_by.too_noisy and not beyond:
        verdict = TOO_NOISY
    elif abs(judged) < threshold:
        verdict = "same"
    elif apart and size >= allowed and not returned:
        verdict = "slower" if judged < 0 else "faster"
    else:
        verdict = "ambiguous"
    on = "" if estimator == MEDIAN else f" (median {change:+.1%})"
    words = f"{allowed_by.words}: {TOO_NOISY_ADVICE}" if allowed_by.too_noisy else allowed_by.words
    note = (f"{judged:+.1%} on the {estimator}{on}; {ranges}; {basis}; {words}"
            + (f"; {returned}" if returned else ""))
    verdict, note = weigh_contention(verdict, note, base, new, size, drop=judged < 0, require_quiet=require_quiet,
                                     measured=noise is not None)
    return Comparison(**head, base_gbps=b_rate, new_gbps=n_rate, change=change, verdict=verdict,
                      note=note, base_range=_range(base), new_range=_range(new), between_run=noise,
                      history_runs=len(history), allowance_ln=allowed, estimator=estimator, judged_change=judged,
                      base_runs=list(pooled) if len(pooled) > 1 else None, allowance=allowed_by.words)


def compare_runs(base: RunDocument, new: RunDocument, threshold: float = THRESHOLD, cross_host: bool = False,
                 history: dict[str, list[float]] | None = None, one_box: Collection[str] = (),
                 require_quiet: bool = False) -> list[Comparison]:
    """Every case of either run, matched by case id; `history[case]` the case's earlier fast ends
    (`case_history`); `require_quiet`: hold back any change measured with a contended side."""
    check_comparable(base, new, cross_host, one_box)
    base_by_case = {r["case"]: r for r in base["results"]}
    new_by_case = {r["case"]: r for r in new["results"]}
    out = []
    for case, new_row in new_by_case.items():
        if case in base_by_case:
            out.append(compare_case(base_by_case[case], new_row, threshold, (history or {}).get(case), require_quiet))
        else:
            failed = new_row["status"] == "failed"
            out.append(Comparison(new_row["bench"], new_row["params"], case, None,
                                  (new_row.get("gbps") or {}).get("median"), None, "failed" if failed else "new",
                                  f"new case, failed: {new_row.get('reason')}" if failed else ""))
    partial = new["run"].get("partial")
    for case, base_row in base_by_case.items():
        if case not in new_by_case:
            note = f"not in run {new['run']['id']}" + (f" ({partial})" if partial else "")
            out.append(Comparison(base_row["bench"], base_row["params"], case,
                                  (base_row.get("gbps") or {}).get("median"), None, None, "missing", note))
    return out


def suite_note(base: RunDocument, new: RunDocument, comparisons: list[Comparison]) -> str | None:
    """What a pair of runs of two different suites means for the verdicts, in one line (None for one
    suite): the cases both share are compared, those of the base the new run lacks still gate."""
    b, n = base["run"], new["run"]
    if (b.get("suite"), b.get("suite_hash")) == (n.get("suite"), n.get("suite_hash")):
        return None
    missing = sum(c.verdict == "missing" for c in comparisons)
    only_new = sum(c.verdict == "new" for c in comparisons)
    shared = len(comparisons) - missing - only_new  # a run of --bench cases has no suite: said so, never 'None'
    ran_b, ran_n = (f"suite '{r['suite']}'" if r.get("suite") else "--bench cases (no suite)" for r in (b, n))
    return (f"run {b['id']} ran {ran_b} and run {n['id']} {ran_n}: {shared} case(s) both "
            f"ran are compared, {only_new} only in run {n['id']} are listed as new, {missing} only in run {b['id']} "
            "are missing (and gate): make the baseline from the suite you compare")


def case_history(store: Any, new: RunDocument) -> dict[str, list[float]]:
    """Each case's fast end (p90 GB/s) in `store`'s runs, contended or not, of the new run's host and context that came before it
    (all of them where the new run is not one of `store`'s, e.g. an export of another database):
    the history every comparison of this pair weighs its changes against. {} without a store."""
    run = new["run"]
    if store is None or store.host(run["host_id"]) is None:
        return {}
    before = None
    if isinstance(run["id"], int):
        try:
            stored = RunRecord.from_row(store.run(store.resolve_run(run["id"]))).to_json()
        except BadInput:  # no run of that id here: the new run is another database's
            stored = {}
        before = run["id"] if same_run(stored, run) else None
    return store.case_fast_ends([run["host_id"]], run["context_id"], [r["case"] for r in new["results"]], before)


def has_regression(comparisons: list[Comparison]) -> bool:
    """Whether CI should fail: a case slower beyond its noise, failed in the new run, missing from it or
    ok in the base and skipped in it."""
    return any(c.verdict in GATING for c in comparisons)


def held_back_drops(comparisons: list[Comparison]) -> list[Comparison]:
    """Drops the statistics call `slower` but that the new run's contention can still explain (or,
    with --require-quiet, any drop measured with a contended side): not judged, so never a PASS
    either (DESIGN.md, Verdicts) — `compare` ends INCOMPLETE on them."""
    return [c for c in comparisons if c.verdict == AMBIGUOUS_CONTENDED and (c.change or 0.0) < 0]


def regression_summary(comparisons: list[Comparison], base_id: Any, new_id: Any) -> str:
    """One line for a failed compare: how many cases regressed and how; a case that went away (lost or
    missing) named with its reason, so the CI log says what is missing without the table."""
    count = {v: [c for c in comparisons if c.verdict == v] for v in GATING}
    parts = [f"{len(count['slower'])} case(s) slower from run {base_id} to run {new_id}"]
    if count["failed"]:
        parts.append(f"{len(count['failed'])} case(s) failed in run {new_id}")
    named = lambda cs: ", ".join(f"{c.bench} {describe_params(c.bench, c.params)} ({c.note})" for c in cs)
    if count["lost"]:
        parts.append(f"{len(count['lost'])} case(s) ok in run {base_id} and not in run {new_id}: {named(count['lost'])}")
    if count["missing"]:
        parts.append(f"{len(count['missing'])} case(s) of run {base_id} missing from run {new_id}: "
                     f"{named(count['missing'])}")
    return "; ".join(parts)
