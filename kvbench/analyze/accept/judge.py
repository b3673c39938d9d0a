"""Acceptance of a server: rules kept as data (suites/rules/*.toml) judged against a run.

A rule names a benchmark, a parameter subset and one threshold: a fraction of the path's
peak, an absolute rate with its unit, or a ratio between two cases. A rule whose benchmark
did not run is SKIP with the reason, never PASS.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

# Verdict and the rules' API (load_rules, rules_for_host, applies): re-exported, the names callers know
from kvbench.analyze.case_verdict import (  # noqa: F401
    LINK_AT_MAX,
    NO_CASE,
    REPLAY_UNCHANGED,
    Verdict,
    case_ids,
    case_name,
    matching,
)
from kvbench.analyze.accept.cases import not_judged, rule_limits, rule_needs, sides
from kvbench.analyze.accept.kinds import kind_of
from kvbench.analyze.accept.rules import Rule, RulesFile, applies, load_rules, rules_for_host  # noqa: F401
from kvbench.analyze.runs import RunDocument
from kvbench.benches.describe import canonical_subset, older_results_filled


def _failed_cases(rule: Rule, doc: RunDocument) -> list[dict[str, Any]]:
    """Every failed result among the cases a rule judges (either side of a ratio, any contestant)."""
    out: list[dict[str, Any]] = []
    for bench, params in sides(rule):
        listed = {k: {canonical_subset(bench, {k: v})[k] for v in values} for k, values in params.items()
                  if isinstance(values, list)}
        plain = {k: v for k, v in params.items() if k not in listed}
        out += [r for r in matching(doc, bench, plain) if r["status"] == "failed" and r not in out
                and all(r["params"].get(k) in values for k, values in listed.items())]
    return out


def judge_rule(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """The rule's verdicts; whatever its kind, every failed case it covers is a FAIL of its own
    (an integrity failure beside passing cases must not vanish into a PASS or a SKIP), and one case
    has one verdict: a failed case's SKIP or PASS from its kind's path (a link rule's "no NVLink", a
    planted slip) becomes its FAIL, never a second row beside it."""
    out = _judge_kind(rule, doc)
    named = {v.why.split(" failed: ")[0] for v in out if v.verdict == "FAIL" and " failed: " in v.why}
    for r in _failed_cases(rule, doc):
        case = case_name(r["bench"], r["params"])
        case = case if r["bench"] == rule.bench else f"{r['bench']} {case}"
        ids = case_ids(r)
        failed = Verdict(rule.id, rule.bench, case, "FAIL", "-", out[0].threshold if out else "",
                         f"failed: {r.get('reason') or 'no reason recorded'}", cases=ids)
        # the verdicts on this case alone: by its id, or by its name where a verdict recorded no id
        mine = [i for i, v in enumerate(out) if (set(ids) & set(v.cases) and set(v.cases) <= set(ids))
                or (v.case == case and not v.cases)]
        if not mine:
            if case not in named:
                named.add(case)
                out.append(failed)
            continue
        keep = next((i for i in mine if out[i].verdict == "FAIL"), mine[0])
        if out[keep].verdict != "FAIL":
            out[keep] = replace(out[keep], verdict="FAIL", measured="-", why=failed.why, cases=ids or out[keep].cases)
        out = [v for i, v in enumerate(out) if i == keep or i not in mine]
        named.add(case)
    return out


def _judge_kind(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """The verdicts of the rule's own kind (kinds/: the first registered kind that claims it)."""
    return kind_of(rule).judge(rule, doc)


def judge(doc: RunDocument, rules: list[RulesFile]) -> list[Verdict]:
    """Every rule's verdicts, each with the hardware its cases need, its threshold as numbers with a
    unit, and the cases of its benchmarks it did not judge, with why (cases.py)."""
    out, doc = [], older_results_filled(doc)  # stored before `pages` existed: judged as pages=base
    for rules_file in rules:
        for rule in rules_file.rule:
            verdicts = judge_rule(rule, doc)
            needs, limits, unjudged = rule_needs(rule), rule_limits(rule), not_judged(rule, verdicts, doc)
            out += [replace(v, needs=v.needs or needs, not_judged=unjudged, **({} if v.unit else limits))
                    for v in verdicts]
    return out
