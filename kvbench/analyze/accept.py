"""Acceptance of a server: rules kept as data (suites/rules/*.toml) judged against a run.

A rule names a benchmark, a parameter subset and one threshold: a fraction of the path's
peak, an absolute rate with its unit, or a ratio between two cases. A rule whose benchmark
did not run is SKIP with the reason, never PASS.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# load_rules, rules_for_host, applies: the rules' API, re-exported
from kvbench.analyze.accept_rules import RATE_UNITS, Rule, RulesFile, applies, load_rules, rules_for_host  # noqa: F401
from kvbench.analyze.paired import paired_ratio, ratio_text
from kvbench.analyze.accept_cases import not_judged, rule_limits, rule_needs, sides
from kvbench.analyze.runs import RunDocument
from kvbench.benches.describe import canonical_subset, describe_params, older_results_filled
from kvbench.benches.registry import all_benches
from kvbench.hardware.peaks import ABOVE_PEAK_TOLERANCE, above_peak, above_peak_warning
from kvbench.metadata import LINK, PCIE_REPLAY_DELTA, PER_GPU_GBPS


# The thresholds of rules on facts a result records (not its rate): a busy neighbour cannot explain their failure.
NO_CASE = "not run: the suite has no such case"  # a rule's SKIP where the run holds no case for it
LINK_AT_MAX = "link at max gen/width under load"
REPLAY_UNCHANGED = "replay counter unchanged"


@dataclass(frozen=True)
class Verdict:
    rule: str
    bench: str
    case: str
    verdict: str  # PASS | FAIL | SKIP
    measured: str
    threshold: str
    why: str
    needs: tuple[str, ...] = ()  # hardware the rule's cases cross ("gpu", "nic"): its SKIP where expected is INCOMPLETE
    cases: tuple[str, ...] = ()  # the ids of the cases (results) this verdict judged
    value: float | None = None  # what was measured, in `unit`
    unit: str = ""  # of value and limits: "fraction of peak", "GB/s", "x", "fraction below the fastest", "replays"
    limit: float | None = None  # the threshold's lower bound (None: none), in `unit`
    limit_max: float | None = None  # its upper bound
    not_judged: tuple[tuple[str, str], ...] = ()  # (case id, why) of the rule's benchmarks' cases it did not judge
    low: float | None = None  # the 95 % interval of `value`, in `unit`, where one was judged (analyze/uncertain.py)
    high: float | None = None


def _ids(*results: dict[str, Any] | None) -> tuple[str, ...]:
    """The case ids of the results a verdict judged, each once."""
    return tuple(dict.fromkeys(r["case"] for r in results if r and r.get("case")))


def _matching(doc: RunDocument, bench: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    wanted = canonical_subset(bench, params)
    return [r for r in doc["results"] if r["bench"] == bench and all(r["params"].get(k) == v for k, v in wanted.items())]


def _case(bench: str, params: dict[str, Any], skip_defaults: bool = True) -> str:
    """The parameters that set a case apart; "all" only for a rule that names none (a case whose
    parameters are all defaults is written out: 'all' would claim cases it did not judge)."""
    if not params:
        return "all"
    text = describe_params(bench, canonical_subset(bench, params), skip_defaults)
    return describe_params(bench, canonical_subset(bench, params), False) if text == "(defaults)" else text


def _unjudged(doc: RunDocument, bench: str, params: dict[str, Any]) -> tuple[str, str]:
    """(verdict, why) of a rule with no ok case to judge: FAIL where a matching case failed, else SKIP
    with the reason its cases were skipped, or why the benchmark did not run at all."""
    not_ok = [r for r in _matching(doc, bench, params) if r["status"] != "ok"]
    failed = [r for r in not_ok if r["status"] == "failed"]
    if failed:
        return "FAIL", f"{_case(bench, failed[0]['params'])} failed: {failed[0]['reason']}"
    if not_ok:
        return "SKIP", f"{not_ok[0]['status']}: {not_ok[0]['reason']}"
    spec = all_benches().get(bench)
    if spec is None:
        return "SKIP", f"not run: benchmark {bench} is not available in this kvbench"
    reason = spec.unavailable_reason()
    return "SKIP", f"not run: {bench} is unavailable here — {reason}" if reason else NO_CASE


def _bug(rule: Rule, case: str, threshold: str, results: list[dict[str, Any]]) -> Verdict:
    """FAIL for a case judged on a result above its peak (ABOVE_PEAK_TOLERANCE): whatever the rule's
    kind, a number the hardware cannot reach proves nothing but a bug."""
    r = next(r for r in results if above_peak(r.get("efficiency")))
    which = f" ({r.get('bench', rule.bench)} {_case(r.get('bench', rule.bench), r['params'])})" if len(results) > 1 else ""
    return Verdict(rule.id, rule.bench, case, "FAIL", f"{r['efficiency']:.1%} of {r['peak_gbps']:.1f} GB/s", threshold,
                   above_peak_warning(r["efficiency"]) + which, cases=_ids(*results), value=r["efficiency"],
                   unit="fraction of peak", limit_max=1 + ABOVE_PEAK_TOLERANCE)


def _failed_cases(rule: Rule, doc: RunDocument) -> list[dict[str, Any]]:
    """Every failed result among the cases a rule judges (either side of a ratio, any contestant)."""
    out: list[dict[str, Any]] = []
    for bench, params in sides(rule):
        listed = {k: {canonical_subset(bench, {k: v})[k] for v in values} for k, values in params.items()
                  if isinstance(values, list)}
        plain = {k: v for k, v in params.items() if k not in listed}
        out += [r for r in _matching(doc, bench, plain) if r["status"] == "failed" and r not in out
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
        case = _case(r["bench"], r["params"])
        case = case if r["bench"] == rule.bench else f"{r['bench']} {case}"
        ids = _ids(r)
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
    head = {"rule": rule.id, "bench": rule.bench}
    if rule.ratio is not None:
        return _judge_ratio(rule, doc)
    if rule.spread is not None:
        return _judge_spread(rule, doc)
    if rule.link_at_max or rule.replay_unchanged:
        return _judge_recorded(rule, doc)
    if rule.link:
        from kvbench.analyze.nvlink_rule import judge_link  # it builds on this module's helpers

        return judge_link(rule, doc)
    found = _matching(doc, rule.bench, rule.params)
    threshold = (f"≥ {rule.min_fraction_of_peak:.0%} of peak" if rule.min_fraction_of_peak is not None
                 else f"≥ {rule.min.value:g} {rule.min.unit}")
    if not found:
        verdict, why = _unjudged(doc, rule.bench, rule.params)
        return [Verdict(**head, case=_case(rule.bench, rule.params), verdict=verdict, measured="-",
                        threshold=threshold, why=why)]
    out = []
    for r in found:
        case = _case(r["bench"], r["params"])
        if r["status"] != "ok":
            verdict = "FAIL" if r["status"] == "failed" else "SKIP"
            out.append(Verdict(**head, case=case, verdict=verdict, measured="-", threshold=threshold,
                               why=f"{r['status']}: {r['reason']}", cases=_ids(r) if verdict == "FAIL" else ()))
            continue
        rate = r["gbps"]["median"]
        if above_peak(r.get("efficiency")):
            out.append(_bug(rule, case, threshold, [r]))
            continue
        if rule.min_fraction_of_peak is not None:
            if r["efficiency"] is None:
                out.append(Verdict(**head, case=case, verdict="SKIP", measured=f"{rate:.2f} GB/s", threshold=threshold,
                                   why=f"peak unknown: {r.get('peak_source') or 'no peak'}", cases=_ids(r)))
                continue
            value = r["efficiency"]
            ok = value >= rule.min_fraction_of_peak
            measured = f"{r['efficiency']:.1%} of {r['peak_gbps']:.1f} GB/s"
        else:
            value = rate / RATE_UNITS[rule.min.unit]  # in the rule's own unit, beside its threshold
            ok = rate >= rule.min.value * RATE_UNITS[rule.min.unit]
            measured = f"{rate:.2f} GB/s"
        out.append(Verdict(**head, case=case, verdict="PASS" if ok else "FAIL", measured=measured,
                           threshold=threshold, why=rule.why, cases=_ids(r), value=value))
    return out


def _judge_ratio(rule: Rule, doc: RunDocument) -> list[Verdict]:
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
    tops = [r for r in _matching(doc, of_bench, {**rule.params, **of}) if r["status"] == "ok"
            and all(r["params"].get(k) in values for k, values in contest.items())]
    bottoms = [r for r in _matching(doc, to_bench, {**rule.params, **to}) if r["status"] == "ok"]

    def rest(r: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in r["params"].items() if k not in varying}

    def same_case(a: dict[str, Any], b: dict[str, Any]) -> bool:  # and the same run, when several are judged
        return rest(a) == rest(b) and a.get("run_id") == b.get("run_id")

    def label(bench: str, params: dict[str, Any]) -> str:
        text = _case(bench, params, False) if params else ""
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
        case = f"{run}{_case(of_bench, rest(top))}: {label(of_bench, shown)}{best_of} / {label(to_bench, to)}"
        sides = [top] + ([bottom] if bottom is not None else [])
        if any(above_peak(r.get("efficiency")) for r in sides):
            out.append(_bug(rule, case, threshold, sides))  # a ratio of two bugs can look fine
            continue
        within = value >= ratio.min and (ratio.max is None or value <= ratio.max)
        out.append(Verdict(rule.id, rule.bench, case, "PASS" if within else "FAIL", measured, threshold, rule.why,
                           cases=_ids(top, bottom), value=value))
    if not out:
        case = f"{label(of_bench, {**rule.params, **of})} / {label(to_bench, to)}"
        missing = (of_bench, {**rule.params, **of}) if not tops else (to_bench, {**rule.params, **to})
        verdict, why = _unjudged(doc, *missing)
        out.append(Verdict(rule.id, rule.bench, case, verdict, "-", threshold, why))
    return out


def _judge_spread(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """Cases that differ only in `spread.over` (e.g. every GPU of a run) within `max` of the fastest."""
    over = rule.spread.over
    threshold = f"all within {rule.spread.max:.0%} of the fastest {over}"
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in _matching(doc, rule.bench, rule.params):
        if r["status"] == "ok":
            key = (r.get("run_id"), tuple(sorted((k, str(v)) for k, v in r["params"].items() if k != over)))
            groups.setdefault(key, []).append(r)
    per_gpu = [r for r in _matching(doc, rule.bench, {k: v for k, v in rule.params.items() if k != over})
               if r["status"] == "ok" and (r.get("metadata") or {}).get(PER_GPU_GBPS) and over == "gpu"]
    for r in per_gpu:  # one result of every GPU at once (gpus=all) carries the per-GPU rates
        groups[("all", r["case"] if "case" in r else id(r))] = [
            {"params": {**r["params"], over: key}, "gbps": {"median": rate}, "case": r.get("case")}
            for key, rate in r["metadata"][PER_GPU_GBPS].items()]
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        rates = {str(m["params"].get(over)): m["gbps"]["median"] for m in members}
        fastest = max(rates.values())
        slowest_key = min(rates, key=rates.__getitem__)
        shortfall = 1 - rates[slowest_key] / fastest
        case = f"{_case(rule.bench, {k: v for k, v in members[0]['params'].items() if k != over})}: {over} " +             ", ".join(rates)
        if any(above_peak(m.get("efficiency")) for m in members):
            out.append(_bug(rule, case, threshold, members))  # a spread measured against a bug's rate
            continue
        out.append(Verdict(rule.id, rule.bench, case, "PASS" if shortfall <= rule.spread.max else "FAIL",
                           f"{over}={slowest_key} {shortfall:.1%} below the fastest", threshold, rule.why,
                           cases=_ids(*members), value=shortfall))
    if not out:
        ok = [r for r in _matching(doc, rule.bench, rule.params) if r["status"] == "ok"]
        verdict, why = _unjudged(doc, rule.bench, rule.params) if not ok else (
            "SKIP", f"fewer than two values of {over} in one run")
        # one GPU's cases ran but there is no second to compare: incomplete only where several are expected
        needs = ("multi-gpu",) if ok and over == "gpu" else ()
        out.append(Verdict(rule.id, rule.bench, _case(rule.bench, rule.params), verdict, "-", threshold, why, needs))
    return out


def _judge_recorded(rule: Rule, doc: RunDocument) -> list[Verdict]:
    """Facts a GPU benchmark records with its result: the link under load, the replay-counter delta."""
    found = [r for r in _matching(doc, rule.bench, rule.params) if r["status"] == "ok"]
    threshold = LINK_AT_MAX if rule.link_at_max else REPLAY_UNCHANGED
    if not found:
        verdict, why = _unjudged(doc, rule.bench, rule.params)
        return [Verdict(rule.id, rule.bench, _case(rule.bench, rule.params), verdict, "-", threshold, why)]
    out = []
    for r in found:
        meta = r.get("metadata") or {}
        case = _case(r["bench"], r["params"])
        if above_peak(r.get("efficiency")):
            out.append(_bug(rule, case, threshold, [r]))
            continue
        if rule.link_at_max:
            link = meta.get(LINK)
            if not link:
                out.append(Verdict(rule.id, rule.bench, case, "SKIP", "-", threshold, "the result recorded no link",
                                   cases=_ids(r)))
                continue
            if link.get("under_load") is False:  # read after a host-timed copy: the link may have idled down
                out.append(Verdict(rule.id, rule.bench, case, "SKIP", "-", threshold,
                                   "the link was read after the copy, not while it ran", cases=_ids(r)))
                continue
            ok = link["gen"] == link["max_gen"] and link["width"] == link["max_width"]
            measured = f"Gen{link['gen']} x{link['width']} of Gen{link['max_gen']} x{link['max_width']}"
        else:
            if PCIE_REPLAY_DELTA not in meta:
                out.append(Verdict(rule.id, rule.bench, case, "SKIP", "-", threshold,
                                   "the result recorded no replay counter", cases=_ids(r)))
                continue
            ok = meta[PCIE_REPLAY_DELTA] == 0
            measured = f"+{meta[PCIE_REPLAY_DELTA]} replays"
        out.append(Verdict(rule.id, rule.bench, case, "PASS" if ok else "FAIL", measured, threshold, rule.why,
                           cases=_ids(r), value=None if rule.link_at_max else meta[PCIE_REPLAY_DELTA]))
    return out


def judge(doc: RunDocument, rules: list[RulesFile]) -> list[Verdict]:
    """Every rule's verdicts, each with the hardware its cases need, its threshold as numbers with a
    unit, and the cases of its benchmarks it did not judge, with why (accept_cases.py)."""
    out, doc = [], older_results_filled(doc)  # stored before `pages` existed: judged as pages=base
    for rules_file in rules:
        for rule in rules_file.rule:
            verdicts = judge_rule(rule, doc)
            needs, limits, unjudged = rule_needs(rule), rule_limits(rule), not_judged(rule, verdicts, doc)
            out += [replace(v, needs=v.needs or needs, not_judged=unjudged, **({} if v.unit else limits))
                    for v in verdicts]
    return out
