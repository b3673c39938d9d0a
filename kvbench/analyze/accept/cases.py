"""What an acceptance rule covers, as data for its verdicts: the groups of cases it names, the
hardware they cross, its threshold as numbers with a unit, and the cases of its benchmarks that it
did not judge, each with why (a rule that says `case: all` but judges one size must say so)."""

from __future__ import annotations

from typing import Any

from kvbench.analyze.accept.rules import Rule
from kvbench.analyze.runs import RunDocument
from kvbench.benches.describe import canonical_subset, describe_params
from kvbench.benches.registry import find_bench
from kvbench.hardware.path import path_needs


def sides(rule: Rule) -> list[tuple[str, dict[str, Any]]]:
    """(benchmark, parameters) of every group of cases a rule judges: its own, and a ratio's two sides
    (a contest's list of values kept as a list)."""
    groups = [(rule.bench, dict(rule.params))]
    for side in (rule.ratio.of, rule.ratio.to) if rule.ratio else ():
        named = side.get("bench", rule.bench)
        groups += [(b, {**rule.params, **{k: v for k, v in side.items() if k != "bench"}})
                   for b in (named if isinstance(named, list) else [named])]
    return groups


def rule_needs(rule: Rule) -> tuple[str, ...]:
    """The hardware the cases a rule judges cross ("gpu", "nic"), from their benchmarks' paths (the
    rule's parameters over the defaults; the first of a ratio's contestants)."""
    needs: set[str] = set()
    for bench_id, params in sides(rule):
        params = {k: (v[0] if isinstance(v, list) else v) for k, v in params.items()}
        spec = find_bench(bench_id)
        try:
            needs |= path_needs(spec.path(spec.canonical_params(params))) if spec else set()
        except Exception:  # a rule's subset that no single case completes: its needs stay unknown
            continue
    return tuple(sorted(needs))


def rule_limits(rule: Rule) -> dict[str, Any]:
    """The rule's threshold as numbers: `unit`, `limit` (lower bound) and `limit_max` (upper bound),
    in the unit its verdicts' `value` is given in."""
    if rule.min_fraction_of_peak is not None:
        return {"unit": "fraction of peak", "limit": rule.min_fraction_of_peak}
    if rule.min is not None:
        return {"unit": rule.min.unit, "limit": rule.min.value}
    if rule.ratio is not None:
        return {"unit": "x", "limit": rule.ratio.min, "limit_max": rule.ratio.max}
    if rule.spread is not None:
        return {"unit": "fraction below the fastest", "limit_max": rule.spread.max}
    if rule.replay_unchanged:
        return {"unit": "replays", "limit_max": 0}
    return {"unit": "link at max gen/width"}  # a fact with no number: PASS or FAIL says it


def _differs(bench: str, wanted: dict[str, Any], params: dict[str, Any]) -> str:
    """The parameters in which a case is not one a rule names, in words ("" when it is one)."""
    def text(key: str, value: Any) -> str:
        return describe_params(bench, {key: value}, False)

    named: dict[str, list[Any]] = {}
    for key, value in wanted.items():
        values = value if isinstance(value, list) else [value]
        named[key] = [canonical_subset(bench, {key: v})[key] for v in values]
    return ", ".join(f"{text(k, params.get(k))} (the rule names {' or '.join(text(k, v) for v in values)})"
                     for k, values in named.items() if params.get(k) not in values)


def not_judged(rule: Rule, verdicts: list[Any], doc: RunDocument) -> tuple[tuple[str, str], ...]:
    """(case id, why) of every result of the rule's benchmarks that none of its verdicts judged:
    not named by the rule (which parameter differs), skipped or failed (its reason), or named and
    ok but left out (a contest's slower contestant, a side without its pair)."""
    judged = {case for v in verdicts for case in v.cases}
    groups = sides(rule)
    out: dict[str, str] = {}
    for r in doc.get("results") or []:
        case = r.get("case")
        if not case or case in judged or case in out:
            continue
        mine = [(b, p) for b, p in groups if b == r["bench"]]
        if not mine:
            continue
        reasons = [_differs(b, p, r["params"]) for b, p in mine]
        if all(reasons):
            out[case] = "not named by the rule: " + reasons[0]
        elif r["status"] != "ok":
            out[case] = f"{r['status']}: {r.get('reason') or 'no reason recorded'}"
        else:
            out[case] = "named and ok, but not judged: no case to pair it with, or not the fastest of a contest"
    return tuple(out.items())
