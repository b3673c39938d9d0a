"""A verdict on a case measured under contention says so, instead of calling a change it cannot tell
from a busy neighbour (the contention record: kvbench/hardware/contention.py, docs/contention.md).

`compare` (and every command that shares its comparison) turns `slower` or `faster` into
`ambiguous (contended)` when either run's case was contended, and so does an `ambiguous` drop (one the
noise swallowed, which a busy box's noise may be hiding): such a change is shown, never gated as
`slower`; a drop held back so was not judged, and `compare` ends INCOMPLETE on it (never PASS).
`accept` re-measures, once, the cases a rule failed on while contended (`contended_failures`,
`with_remeasured`), judges again, and calls a failure still judged on a contended case INCOMPLETE
(`incomplete_on_contention`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvbench.analyze.accept import LINK_AT_MAX, REPLAY_UNCHANGED, Verdict
from kvbench.analyze.runs import RunDocument
from kvbench.hardware.peaks import above_peak
from kvbench.metadata import CONTENTION

AMBIGUOUS_CONTENDED = "ambiguous (contended)"


def contention_reasons(result: dict[str, Any]) -> list[str]:
    """Why a stored result (a run document's row) was measured under contention; [] when clean or not recorded."""
    record = (result.get("metadata") or {}).get(CONTENTION) or {}
    return list(record.get("contended") or [])


def weigh_contention(verdict: str, note: str, base: dict[str, Any], new: dict[str, Any],
                     drop: bool = False) -> tuple[str, str]:
    """(verdict, note) of a comparison once contention is weighed: `slower` / `faster` with either side
    contended becomes `ambiguous (contended)`, the note naming the side and its first reason; so does an
    `ambiguous` drop (`drop`: the change is below the floor's negative), which a busy neighbour's noise
    may be hiding — never a pass (benchmarks/compare_power.py: beside a 2-process CPU hog, 40 % drops
    were `ambiguous` in most cases, their ranges overlapping)."""
    sides = [(name, why) for name, row in (("base", base), ("new", new)) if (why := contention_reasons(row))]
    if not sides or not (verdict in ("slower", "faster") or (verdict == "ambiguous" and drop)):
        return verdict, note
    said = "; ".join(f"{name} contended: {why[0]}" for name, why in sides)
    if verdict == "ambiguous":
        return AMBIGUOUS_CONTENDED, f"a drop within the noise, but {said}: the noise may hide it; re-measure. {note}"
    return AMBIGUOUS_CONTENDED, f"{verdict} if the box had been quiet, but {said}; re-measure. {note}"


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
