"""The rate rule kind: every matching case at least a fraction of its path's peak
(`min_fraction_of_peak`) or an absolute rate with its unit (`min`)."""

from __future__ import annotations

from kvbench.analyze.case_verdict import (
    Verdict,
    above_peak_verdict,
    case_ids,
    case_name,
    matching,
    over_peak,
    unjudged,
)
from kvbench.analyze.accept.rules import RATE_UNITS, Rule
from kvbench.analyze.runs import RunDocument


def judge_rate(rule: Rule, doc: RunDocument) -> list[Verdict]:
    head = {"rule": rule.id, "bench": rule.bench}
    found = matching(doc, rule.bench, rule.params)
    threshold = (f"≥ {rule.min_fraction_of_peak:.0%} of peak" if rule.min_fraction_of_peak is not None
                 else f"≥ {rule.min.value:g} {rule.min.unit}")
    if not found:
        verdict, why = unjudged(doc, rule.bench, rule.params)
        return [Verdict(**head, case=case_name(rule.bench, rule.params), verdict=verdict, measured="-",
                        threshold=threshold, why=why)]
    out = []
    for r in found:
        case = case_name(r["bench"], r["params"])
        if r["status"] != "ok":
            verdict = "FAIL" if r["status"] == "failed" else "SKIP"
            out.append(Verdict(**head, case=case, verdict=verdict, measured="-", threshold=threshold,
                               why=f"{r['status']}: {r['reason']}", cases=case_ids(r) if verdict == "FAIL" else ()))
            continue
        rate = r["gbps"]["median"]
        if over_peak(r):
            out.append(above_peak_verdict(rule, case, threshold, [r]))
            continue
        if rule.min_fraction_of_peak is not None:
            if r["efficiency"] is None:
                out.append(Verdict(**head, case=case, verdict="SKIP", measured=f"{rate:.2f} GB/s", threshold=threshold,
                                   why=f"peak unknown: {r.get('peak_source') or 'no peak'}", cases=case_ids(r)))
                continue
            value = r["efficiency"]
            ok = value >= rule.min_fraction_of_peak
            measured = f"{r['efficiency']:.1%} of {r['peak_gbps']:.1f} GB/s"
        else:
            value = rate / RATE_UNITS[rule.min.unit]  # in the rule's own unit, beside its threshold
            ok = rate >= rule.min.value * RATE_UNITS[rule.min.unit]
            measured = f"{rate:.2f} GB/s"
        out.append(Verdict(**head, case=case, verdict="PASS" if ok else "FAIL", measured=measured,
                           threshold=threshold, why=rule.why, cases=case_ids(r), value=value))
    return out
