"""One acceptance verdict (a rule judged on one case, or on a pair or group of cases) and what every
rule kind (accept/kinds/) builds it from: the run's results a rule's parameters match, the name of a case
as a verdict shows it, the ids of the cases judged, and the verdict of a rule with nothing to judge. A
shared leaf of analyze/: `regress/contended.py` names these verdicts too, so it sits below both rooms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kvbench.analyze.runs import RunDocument
from kvbench.benches.describe import canonical_subset, describe_params
from kvbench.benches.registry import find_bench
from kvbench.hardware.peaks import ABOVE_PEAK_TOLERANCE, above_peak, above_peak_warning


class Rule(Protocol):
    """What a verdict reads of a rule (accept/rules.py's `Rule`): loading the rules' pydantic models is
    the judge's, and a room below accept/ (compare) needs none."""

    id: str
    bench: str

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


def case_ids(*results: dict[str, Any] | None) -> tuple[str, ...]:
    """The case ids of the results a verdict judged, each once."""
    return tuple(dict.fromkeys(r["case"] for r in results if r and r.get("case")))


def matching(doc: RunDocument, bench: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    wanted = canonical_subset(bench, params)
    return [r for r in doc["results"] if r["bench"] == bench and all(r["params"].get(k) == v for k, v in wanted.items())]


def case_name(bench: str, params: dict[str, Any], skip_defaults: bool = True) -> str:
    """The parameters that set a case apart; "all" only for a rule that names none (a case whose
    parameters are all defaults is written out: 'all' would claim cases it did not judge)."""
    if not params:
        return "all"
    text = describe_params(bench, canonical_subset(bench, params), skip_defaults)
    return describe_params(bench, canonical_subset(bench, params), False) if text == "(defaults)" else text


def unjudged(doc: RunDocument, bench: str, params: dict[str, Any]) -> tuple[str, str]:
    """(verdict, why) of a rule with no ok case to judge: FAIL where a matching case failed, else SKIP
    with the reason its cases were skipped, or why the benchmark did not run at all."""
    not_ok = [r for r in matching(doc, bench, params) if r["status"] != "ok"]
    failed = [r for r in not_ok if r["status"] == "failed"]
    if failed:
        return "FAIL", f"{case_name(bench, failed[0]['params'])} failed: {failed[0]['reason']}"
    if not_ok:
        return "SKIP", f"{not_ok[0]['status']}: {not_ok[0]['reason']}"
    spec = find_bench(bench)
    if spec is None:
        return "SKIP", f"not run: benchmark {bench} is not available in this kvbench"
    reason = spec.unavailable_reason()
    return "SKIP", f"not run: {bench} is unavailable here — {reason}" if reason else NO_CASE


def over_peak(*results: dict[str, Any] | None) -> bool:
    """Whether any of `results` is above its peak by more than ABOVE_PEAK_TOLERANCE: every rule kind
    asks here, so one check decides it for all of them."""
    return any(above_peak(r.get("efficiency")) for r in results if r)


def above_peak_verdict(rule: Rule, case: str, threshold: str, results: list[dict[str, Any]]) -> Verdict:
    """FAIL for a case judged on a result above its peak (ABOVE_PEAK_TOLERANCE): whatever the rule's
    kind, a number the hardware cannot reach proves nothing but a bug."""
    r = next(r for r in results if above_peak(r.get("efficiency")))
    which = f" ({r.get('bench', rule.bench)} {case_name(r.get('bench', rule.bench), r['params'])})" if len(results) > 1 else ""
    return Verdict(rule.id, rule.bench, case, "FAIL", f"{r['efficiency']:.1%} of {r['peak_gbps']:.1f} GB/s", threshold,
                   above_peak_warning(r["efficiency"], r.get("peak_source")) + which, cases=case_ids(*results), value=r["efficiency"],
                   unit="fraction of peak", limit_max=1 + ABOVE_PEAK_TOLERANCE)
