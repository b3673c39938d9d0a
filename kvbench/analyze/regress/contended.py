"""What contention can and cannot explain in a verdict (the contention record:
kvbench/hardware/contention.py, docs/contention.md).

Contention only ever slows a transfer; it never speeds one up. So in a comparison only one side can
fake a change: a drop, the new run (a contended base only looked slower, so the drop is at least as
large as it looks); a rise, the base (a contended new run only looked slower, so the rise is at
least as large as it looks). `compare` (kvbench/analyze/regress/compare.py) judges a change whose faking side
was contended on the fast end of the samples (p90 GB/s), which a busy neighbour cannot lift, and
`weigh_contention` then holds back, as `ambiguous (contended)`, only a change the faking side's
contention can still explain: it was measured under more contention than the other side and the
change is within the slowdown that contention plausibly causes (`plausible_slowdown`). A drop beyond
that is `slower` whatever the contention, so `--allow-incomplete` never passes it. `--require-quiet`
(`require_quiet`) keeps a stricter rule for dedicated runners, which only ever adds holds: any change
whose faking side was contended is held back, within the 8× no neighbour explains; a change against a
contended side that cannot fake it, or beyond 8×, is judged as without the flag.

`accept` re-measures, once, the cases a rule failed on while contended (`contended_failures`,
`with_remeasured`), judges again, and calls a failure still judged on a contended case INCOMPLETE
(`incomplete_on_contention`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from kvbench.analyze.case_verdict import LINK_AT_MAX, REPLAY_UNCHANGED, Verdict
from kvbench.analyze.runs import RunDocument
from kvbench.hardware.contention import LIMITS
from kvbench.hardware.peaks import above_peak
from kvbench.metadata import CONTENTION

AMBIGUOUS_CONTENDED = "ambiguous (contended)"
LEAST_EXPLAINED = 2.0  # a contended case may look up to this many times slower than it is
MOST_EXPLAINED = 8.0  # and never more: beyond it a drop is the code's or the box's, not a neighbour's


def contention_reasons(result: dict[str, Any]) -> list[str]:
    """Why a stored result (a run document's row) was measured under contention; [] when clean or not recorded."""
    record = (result.get("metadata") or {}).get(CONTENTION) or {}
    return list(record.get("contended") or [])


def contention_load(result: dict[str, Any]) -> float:
    """The share of the box (0–1) others took while the case was timed: other processes' CPU share
    plus the hypervisor's steal; 0 where not recorded."""
    host = ((result.get("metadata") or {}).get(CONTENTION) or {}).get("host") or {}
    return float(host.get("others_cpu_fraction") or 0.0) + float(host.get("steal_fraction") or 0.0)


def plausible_slowdown(result: dict[str, Any]) -> float:
    """The factor by which the contention recorded with a case could plausibly have slowed it: the
    inverse of the share of the box left to it (others took 67 % of the CPUs: 3×), never under 2×
    (GPU heat, memory stalls and cache sharing slow a case beyond its CPU share) nor over 8× (a drop
    of 10× or 100× is never a neighbour's doing); 1 for a clean case."""
    if not contention_reasons(result):
        return 1.0
    left = max(1.0 - contention_load(result), 1.0 / MOST_EXPLAINED)
    return min(MOST_EXPLAINED, max(LEAST_EXPLAINED, 1.0 / left))


def more_contended(side: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether `side` was measured under contention that `other` was not: `other` clean, or others
    took a larger share of the box (by more than the 10 % that makes a case contended) while `side`
    ran. Two runs beside one steady neighbour are equally contended: their change is the code's."""
    if not contention_reasons(side):
        return False
    return (not contention_reasons(other)
            or contention_load(side) > contention_load(other) + LIMITS["others_cpu_fraction"])


def faking_side(change: float) -> str:
    """The side whose contention could fake a change of this sign: the new run for a drop, the base for a rise."""
    return "new" if change < 0 else "base"


def weigh_contention(verdict: str, note: str, base: dict[str, Any], new: dict[str, Any], size: float,
                     drop: bool, require_quiet: bool = False, measured: bool = True) -> tuple[str, str]:
    """(verdict, note) of a comparison once contention is weighed. `size`: |ln(new / base)| of the
    estimator the verdict used; `drop`: the change is a drop; `measured`: the allowance came from the
    case's runs, not assumed. By default a `slower` (`faster`) is held back as `ambiguous (contended)`
    only when the new run (the base) was more contended than the other side — or contended at all
    while the allowance is only assumed (an assumed allowance knows nothing of how this box varies
    when busy: on the dev VM, identical pairs beside other engineers' load moved 20-54 % on the fast
    end with fewer than 3 runs behind them) — and the change is within `plausible_slowdown` of it; a
    change beyond that is kept and says so. With `require_quiet`, any `slower` / `faster` whose faking side was
    contended (within 8×), and any `ambiguous` drop with a contended side, is held back (a busy neighbour's
    noise may hide a drop); it only ever adds holds to the default."""
    sides = [(name, why) for name, row in (("base", base), ("new", new)) if (why := contention_reasons(row))]
    if not sides:
        return verdict, note
    said = "; ".join(f"{name} contended: {why[0]}" for name, why in sides)
    if require_quiet and verdict == "ambiguous" and drop:
        return AMBIGUOUS_CONTENDED, (f"a drop within the noise, but {said}: the noise may hide it; --require-quiet: "
                                     f"re-measure on a quiet box. {note}")
    if verdict not in ("slower", "faster"):
        return verdict, note
    faker_name = faking_side(-1.0 if drop else 1.0)
    faker, other = (new, base) if faker_name == "new" else (base, new)
    # --require-quiet only ever adds holds (issue 57 item 1): a change its faking side's contention cannot
    # have made (that side quiet: a drop against a contended base), or beyond the 8× no neighbour explains,
    # is kept as the default keeps it
    if require_quiet and contention_reasons(faker) and size < math.log(MOST_EXPLAINED):
        return AMBIGUOUS_CONTENDED, f"{verdict} if the box had been quiet, but {said}; --require-quiet: re-measure. {note}"
    if not contention_reasons(faker):
        other_name = "base" if faker_name == "new" else "new"
        return verdict, (f"{note}; {other_name} contended, which only slows a transfer: the "
                         f"{'drop' if drop else 'rise'} is at least as large as it looks")
    explains = plausible_slowdown(faker)
    busier = more_contended(faker, other)
    if (busier or not measured) and size < math.log(explains):
        why = (f"the {faker_name} run was more contended ({said})" if busier else
               f"{said}, and with fewer than 3 earlier runs the noise of this busy box is unknown")
        return AMBIGUOUS_CONTENDED, (f"{verdict} on the fast end, but {why}, which can explain up to "
                                     f"{explains:.1f}× slower; re-measure. {note}")
    why = (f"beyond the {explains:.1f}× its contention can explain" if busier or not measured else
           f"the {faker_name} run no more contended than the other, and the allowance measured on runs that exist")
    return verdict, f"{note}; {said}: judged on the fast end, {why}"


def _rate_failure(v: Verdict) -> bool:
    """A FAIL on a rate or a ratio of rates, which a busy neighbour can cause; a downtrained link, PCIe
    replays, a case that failed outright (no figure: its bytes did not verify) or a rate above its peak
    (a measurement bug) it cannot."""
    bug = above_peak(v.value) if v.unit == "fraction of peak" else False
    return v.verdict == "FAIL" and v.threshold not in (LINK_AT_MAX, REPLAY_UNCHANGED) and v.measured != "-" and not bug


def contended_failures(verdicts: list[Verdict], doc: RunDocument) -> list[str]:
    """The case ids `accept` re-measures once: every case a FAIL verdict judged, where at least one
    of them was contended (both sides of a ratio run again together)."""
    contended = {r["case"] for r in doc["results"] if r.get("case") and contention_reasons(r)}
    out: dict[str, None] = {}
    for v in verdicts:
        if _rate_failure(v) and contended.intersection(v.cases):
            out.update(dict.fromkeys(v.cases))
    return list(out)


def contended_drops(comparisons: list[Any], base: RunDocument, new: RunDocument) -> list[str]:
    """The case ids `compare --measure-again` measures once more: each `slower` whose base or new result
    was measured while the box was contended (a neighbour's burst, not the code, may have made it)."""
    busy = {r["case"] for doc in (base, new) for r in doc["results"] if r.get("case") and contention_reasons(r)}
    return [c.case for c in comparisons if c.verdict == "slower" and c.case in busy]


def with_remeasured(doc: RunDocument, redo: RunDocument) -> RunDocument:
    """`doc` with each result that `redo` measured again replaced by the new one (which names the run
    it came from in `remeasured_in`)."""
    again = {r["case"]: {**r, "remeasured_in": redo["run"]["id"]} for r in redo["results"]}
    return {**doc, "results": [again.get(r.get("case"), r) for r in doc["results"]]}


def incomplete_on_contention(verdicts: list[Verdict], doc: RunDocument) -> list[Verdict]:
    """A FAIL of a rate that judged a contended case becomes INCOMPLETE: the box was busy, so the failure
    says nothing about it (re-measure on a quiet box: `kvbench doctor` says what to fix). Other verdicts,
    and failures of recorded facts (link, replays), are kept as they are."""
    by_case = {r["case"]: r for r in doc["results"] if r.get("case")}
    out = []
    for v in verdicts:
        busy = [(case, why) for case in v.cases if (why := contention_reasons(by_case.get(case, {})))]
        if not _rate_failure(v) or not busy:
            out.append(v)
            continue
        again = by_case[busy[0][0]].get("remeasured_in")
        out.append(replace(v, verdict="INCOMPLETE", why=(
            f"failed while the box was contended ({busy[0][1][0]})"
            + (f", and again when measured once more (run {again})" if again is not None else "")
            + "; re-measure on a quiet box (kvbench doctor says what to fix)")))
    return out
