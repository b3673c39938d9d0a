"""The ratio rule kind (`[rule.ratio]`): one case measured against another, paired where the case
measured both sides itself (pcie.bidir over pcie.h2d, fragmented over contiguous KV)."""

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
from kvbench.analyze.paired import paired_ratio, ratio_text
from kvbench.analyze.runs import RunDocument
from kvbench.benches.describe import canonical_subset


def judge_ratio(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """One verdict per pair of ok cases that differ only in the ratio's `of` / `to` parameters: the
    ratio the `of` case measured against its `to` side in the same case (paired) where it recorded
    one, else the two cases' medians divided, labelled unpaired.

    `of` / `to` may name another `bench` (pcie.bidir over pcie.h2d): the other parameters must
    then agree between the two benchmarks' results.
    """
    ratio = rule.ratio
    threshold = f"≥ {ratio.min:g} x" if ratio.max is None else f"{ratio.min:g} x – {ratio.max:g} x"
    of, to = dict(ratio.of), dict(ratio.to)
    of_bench, to_bench = of.pop("bench", rule.bench), to.pop("bench", rule.bench)
    listed = {k: v for k, v in of.items() if isinstance(v, list)}
    contest = {k: {canonical_subset(of_bench, {k: v})[k] for v in values} for k, values in listed.items()}
    of = {k: v for k, v in of.items() if k not in contest}
    varying = set(of) | set(to) | set(contest)
    tops = [r for r in matching(doc, of_bench, {**rule.params, **of}) if r["status"] == "ok"
            and all(r["params"].get(k) in values for k, values in contest.items())]
    bottoms = [r for r in matching(doc, to_bench, {**rule.params, **to}) if r["status"] == "ok"]

    def rest(r: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in r["params"].items() if k not in varying}

    def same_case(a: dict[str, Any], b: dict[str, Any]) -> bool:  # and the same run, when several are judged
        return rest(a) == rest(b) and a.get("run_id") == b.get("run_id")

    def label(bench: str, params: dict[str, Any]) -> str:
        text = case_name(bench, params, False) if params else ""
        return text if bench == rule.bench else f"{bench} {text}".strip()

    # a ratio the case measured itself (its two sides interleaved): read, never divided; a side of
    # another benchmark is named by it (pcie.bidir times pcie.h2d alone: against {"bench": "pcie.h2d"})
    against = canonical_subset(to_bench, to) if of_bench == to_bench else {"bench": to_bench,
                                                                             **canonical_subset(to_bench, to)}

    def paired(top: dict[str, Any]) -> dict[str, Any] | None:
        return paired_ratio(top, against)

    if contest:  # only the fastest contestant of each case is judged: by its paired ratio where all have one
        groups: dict[str, list[dict[str, Any]]] = {}
        for top in tops:
            groups.setdefault(repr((sorted(rest(top).items()), top.get("run_id"))), []).append(top)
        tops = [max(group, key=(lambda t: paired(t)["median"]) if all(paired(t) for t in group)
                    else (lambda t: t["gbps"]["median"])) for group in groups.values()]
    out = []
    for top in tops:
        bottom = next((b for b in bottoms if same_case(b, top)), None)
        record = paired(top)
        if record is not None:
            value, measured = record["median"], ratio_text(record)
        elif bottom is None:
            continue
        else:  # an older result, or sides no case pairs: two medians, and said so
            value = top["gbps"]["median"] / bottom["gbps"]["median"]
            measured = f"{value:.2f} x (unpaired)"
        run = f"run {top['run_id']} " if top.get("run_id") is not None else ""
        shown = {**of, **{k: top["params"][k] for k in contest}}
        best_of = f" (best of {', '.join(str(v) for values in listed.values() for v in values)})" if listed else ""
        case = f"{run}{case_name(of_bench, rest(top))}: {label(of_bench, shown)}{best_of} / {label(to_bench, to)}"
        sides = [top] + ([bottom] if bottom is not None else [])
        if over_peak(*sides):
            out.append(above_peak_verdict(rule, case, threshold, sides))  # a ratio of two bugs can look fine
            continue
        within = value >= ratio.min and (ratio.max is None or value <= ratio.max)
        out.append(Verdict(rule.id, rule.bench, case, "PASS" if within else "FAIL", measured, threshold, rule.why,
                           cases=case_ids(top, bottom), value=value))
    if not out:
        case = f"{label(of_bench, {**rule.params, **of})} / {label(to_bench, to)}"
        missing = (of_bench, {**rule.params, **of}) if not tops else (to_bench, {**rule.params, **to})
        verdict, why = unjudged(doc, *missing)
        out.append(Verdict(rule.id, rule.bench, case, verdict, "-", threshold, why))
    return out
