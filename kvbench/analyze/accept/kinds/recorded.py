"""The recorded-fact rule kinds (`link_at_max`, `replay_unchanged`): what a GPU benchmark records
beside its rate (the PCIe link under load, the replay counter's delta), not the rate itself."""

from __future__ import annotations

from kvbench.analyze.case_verdict import (
    LINK_AT_MAX,
    REPLAY_UNCHANGED,
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
from kvbench.metadata import LINK, PCIE_REPLAY_DELTA


def judge_recorded(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """Facts a GPU benchmark records with its result: the link under load, the replay-counter delta."""
    found = [r for r in matching(doc, rule.bench, rule.params) if r["status"] == "ok"]
    threshold = LINK_AT_MAX if rule.link_at_max else REPLAY_UNCHANGED
    if not found:
        verdict, why = unjudged(doc, rule.bench, rule.params)
        return [Verdict(rule.id, rule.bench, case_name(rule.bench, rule.params), verdict, "-", threshold, why)]
    out = []
    for r in found:
        meta = r.get("metadata") or {}
        case = case_name(r["bench"], r["params"])
        if over_peak(r):
            out.append(above_peak_verdict(rule, case, threshold, [r]))
            continue
        if rule.link_at_max:
            link = meta.get(LINK)
            if not link:
                out.append(Verdict(rule.id, rule.bench, case, "SKIP", "-", threshold, "the result recorded no link",
                                   cases=case_ids(r)))
                continue
            if link.get("under_load") is False:  # read after a host-timed copy: the link may have idled down
                out.append(Verdict(rule.id, rule.bench, case, "SKIP", "-", threshold,
                                   "the link was read after the copy, not while it ran", cases=case_ids(r)))
                continue
            ok = link["gen"] == link["max_gen"] and link["width"] == link["max_width"]
            measured = f"Gen{link['gen']} x{link['width']} of Gen{link['max_gen']} x{link['max_width']}"
        else:
            if PCIE_REPLAY_DELTA not in meta:
                out.append(Verdict(rule.id, rule.bench, case, "SKIP", "-", threshold,
                                   "the result recorded no replay counter", cases=case_ids(r)))
                continue
            ok = meta[PCIE_REPLAY_DELTA] == 0
            measured = f"+{meta[PCIE_REPLAY_DELTA]} replays"
        out.append(Verdict(rule.id, rule.bench, case, "PASS" if ok else "FAIL", measured, threshold, rule.why,
                           cases=case_ids(r), value=None if rule.link_at_max else meta[PCIE_REPLAY_DELTA]))
    return out
