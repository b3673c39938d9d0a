"""The NVLink acceptance rule: every ordered pair of GPUs reaches a fraction of its NVLink peak in
gpu.p2p (a rule with `link = "nvlink"`, suites/rules/h200.toml and b200.toml), and failing closed
when the host profile promises NVLink.

A pair whose link is not NVLink (PCIe peer-to-peer, or none: staged through host memory) is never
judged against its PCIe peak: SKIP, naming the link. Where the profile expects NVLink
(`[expect] nvlink = true`), `fail_closed` turns every SKIP of such a rule into FAIL — a pair without
NVLink, gpu.p2p skipped or not run — and adds a FAIL for each ordered pair of the profile's GPUs that
no verdict judged. With one GPU and no such profile the rule SKIPs quietly (it needs two GPUs).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from kvbench.analyze.case_verdict import Verdict, case_ids, case_name, matching, over_peak, unjudged
from kvbench.analyze.accept.profile import Profile
from kvbench.analyze.accept.rules import Rule, RulesFile
from kvbench.hardware.peaks import ABOVE_PEAK_TOLERANCE, above_peak_warning

NEEDS = ("multi-gpu",)  # a pair needs two GPUs: its SKIP is INCOMPLETE only where several are expected
PAIR = re.compile(r"pair=(\d+-\d+)")


def judge_link(rule: Rule, doc: dict[str, Any]) -> list[Verdict]:
    """One verdict per gpu.p2p result the rule matches: its fraction of the NVLink peak, where the pair's
    link is `rule.link`; SKIP naming the link where it is not."""
    threshold = f"≥ {rule.min_fraction_of_peak:.0%} of the {rule.link} peak, every ordered pair"
    found = matching(doc, rule.bench, rule.params)
    if not found:
        verdict, why = unjudged(doc, rule.bench, rule.params)
        return [Verdict(rule.id, rule.bench, case_name(rule.bench, rule.params), verdict, "-", threshold, why, NEEDS)]
    out = []
    for r in found:
        case = f"pair={r['params'].get('pair')} {case_name(r['bench'], {k: v for k, v in r['params'].items() if k != 'pair'})}"

        def verdict(word: str, measured: str, why: str, value: float | None = None, r=r, case=case) -> Verdict:
            return Verdict(rule.id, rule.bench, case, word, measured, threshold, why, NEEDS, cases=case_ids(r), value=value)

        if r["status"] != "ok":
            out.append(verdict("FAIL" if r["status"] == "failed" else "SKIP", "-", f"{r['status']}: {r['reason']}"))
            continue
        link = (r.get("metadata") or {}).get("peer_link") or {}
        if link.get("kind") != rule.link:
            what = link.get("note") or link.get("kind") or "no link recorded"
            out.append(verdict("SKIP", "-", f"pair {r['params'].get('pair')} has no {rule.link}: {what}"))
            continue
        if over_peak(r):
            out.append(replace(verdict("FAIL", f"{r['efficiency']:.1%} of {r['peak_gbps']:.1f} GB/s",
                                       above_peak_warning(r["efficiency"], r.get("peak_source")), r["efficiency"]),
                               limit_max=1 + ABOVE_PEAK_TOLERANCE))
            continue
        if r.get("efficiency") is None:
            out.append(verdict("SKIP", f"{r['gbps']['median']:.2f} GB/s",
                               f"peak unknown: {r.get('peak_source') or 'no peak'}"))
            continue
        ok = r["efficiency"] >= rule.min_fraction_of_peak
        out.append(verdict("PASS" if ok else "FAIL", f"{r['efficiency']:.1%} of {r['peak_gbps']:.1f} GB/s",
                           rule.why, r["efficiency"]))
    return out


def fail_closed(verdicts: list[Verdict], profile: Profile | None, rules: list[RulesFile]) -> list[Verdict]:
    """`verdicts` with every SKIP of a link rule (of `rules`) turned into FAIL, and a FAIL for every
    ordered pair of the profile's GPUs a link rule did not judge, where the profile expects NVLink;
    else unchanged. accept and the report call this one function."""
    link_rules = [r for f in rules for r in f.rule if r.link]
    if profile is None or not profile.expect.nvlink:
        return verdicts
    why = f"profile '{profile.name}' expects NVLink between every pair of GPUs"
    out = []
    for v in verdicts:
        rule = next((r for r in link_rules if r.id == v.rule), None)
        out.append(replace(v, verdict="FAIL", why=f"{why}; {v.why}") if rule and v.verdict == "SKIP" else v)
    gpus = profile.expect.gpus or 0
    for rule in link_rules:
        judged = {m.group(1) for v in out if v.rule == rule.id and v.verdict in ("PASS", "FAIL")
                  for m in [PAIR.search(v.case)] if m}
        missing = [f"{a}-{b}" for a in range(gpus) for b in range(gpus) if a != b and f"{a}-{b}" not in judged]
        if missing and gpus >= 2:
            shown = ", ".join(missing[:8]) + (f", … ({len(missing)} in all)" if len(missing) > 8 else "")
            out.append(Verdict(rule.id, rule.bench, "every ordered pair", "FAIL", "-",
                               f"{gpus * (gpus - 1)} ordered pairs judged", f"{why}; gpu.p2p did not measure pair(s) "
                               f"{shown}", NEEDS))
    return out
