"""Acceptance on a contended box: a rule that fails only on a contended case is re-measured once and,
if it still fails while contended, INCOMPLETE (re-measure), never FAIL; a failure on a quiet case, and
a failure of a recorded fact (link, replays), stays FAIL. The stored real run of tests/fixtures/runs/
with contention records written in by the test."""

import copy

import pytest

from kvbench.analyze.accept.judge import judge
from kvbench.analyze.regress.contended import contended_failures, incomplete_on_contention, with_remeasured
from tests.analyze.rules import ONE_THREAD, kv_ratio, load, rate, rule

BUSY = "other processes used 90% of the CPUs (1.80 of 2): stress (1.50 CPU)"


@pytest.fixture
def rules(tmp_path):
    return [load(tmp_path, rule("impossible", "dram.copy", params=ONE_THREAD, min=rate(10, "TB/s")),
                 rule("floor", "dram.copy", params='{ size = "64MiB" }', min=rate(1)),
                 rule("fragments", "kv.restore", ratio=kv_ratio(1000)))]


def busy(doc, *matches):
    """`doc` with the results matching any of `matches` (bench, params subset) recorded as contended."""
    out = copy.deepcopy(doc)
    for r in out["results"]:
        contended = any(r["bench"] == bench and all(r["params"].get(k) == v for k, v in params.items())
                        for bench, params in matches)
        r["metadata"] = {**(r.get("metadata") or {}),
                         "contention": {"contended": [BUSY] if contended else [], "faults": [], "host": {}}}
    return out


IMPOSSIBLE = ("dram.copy", {"size": 256 * 2**20, "threads": 1, "fragment": 0})
HOST_KV = ("kv.restore", {"strategy": "host"})


def test_every_verdict_names_the_cases_it_judged(quick, rules):
    by_rule = {}
    for v in judge(quick, rules):
        by_rule.setdefault(v.rule, []).append(v)
    cases = {r["case"]: r for r in quick["results"]}
    (impossible,) = by_rule["impossible"]
    assert [cases[c]["params"]["size"] for c in impossible.cases] == [256 * 2**20]
    (ratio,) = by_rule["fragments"]
    assert [cases[c]["params"]["strategy"] for c in ratio.cases] == ["host", "contiguous"]  # both sides of the ratio


def test_a_failure_on_a_quiet_case_stays_a_failure(quick, rules):
    doc = busy(quick)  # records, all clean
    verdicts = judge(doc, rules)
    assert contended_failures(verdicts, doc) == []
    assert [v.verdict for v in incomplete_on_contention(verdicts, doc) if v.rule == "impossible"] == ["FAIL"]


def test_a_failure_only_on_a_contended_case_is_remeasured_then_incomplete(quick, rules):
    doc = busy(quick, IMPOSSIBLE, HOST_KV)
    verdicts = judge(doc, rules)
    again = contended_failures(verdicts, doc)
    by_case = {r["case"]: r for r in doc["results"]}
    assert sorted((by_case[c]["bench"], by_case[c]["params"].get("strategy")) for c in again) == [
        ("dram.copy", None), ("kv.restore", "contiguous"), ("kv.restore", "host")]  # a ratio's both sides
    final = {v.rule: v for v in incomplete_on_contention(verdicts, doc)}
    assert final["impossible"].verdict == "INCOMPLETE" and final["fragments"].verdict == "INCOMPLETE"
    assert final["impossible"].why == (f"failed while the box was contended ({BUSY}); re-measure on a quiet box "
                                       "(kvbench doctor says what to fix)")
    assert final["floor"].verdict == "PASS"  # a pass on a busy box is still a pass


def test_a_case_measured_once_more_replaces_the_contended_one_and_decides(quick, rules):
    doc = busy(quick, IMPOSSIBLE)
    case = contended_failures(judge(doc, rules), doc)[0]
    redo_row = {**next(r for r in doc["results"] if r["case"] == case)}
    quiet = {**redo_row, "metadata": {"contention": {"contended": [], "faults": [], "host": {}}}}
    merged = with_remeasured(doc, {"run": {"id": 7}, "results": [quiet]})
    assert [r["remeasured_in"] for r in merged["results"] if r["case"] == case] == [7]
    assert len(merged["results"]) == len(doc["results"])
    verdicts = incomplete_on_contention(judge(merged, rules), merged)
    assert [v.verdict for v in verdicts if v.rule == "impossible"] == ["FAIL"]  # quiet now: the failure is real
    still = with_remeasured(doc, {"run": {"id": 7}, "results": [redo_row]})
    (v,) = [v for v in incomplete_on_contention(judge(still, rules), still) if v.rule == "impossible"]
    assert v.verdict == "INCOMPLETE" and "and again when measured once more (run 7)" in v.why


def test_a_downtrained_link_fails_however_busy_the_box(tmp_path):
    rules = load(tmp_path, rule("link", "pcie.h2d", link_at_max=True))
    link = {"gen": 4, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}
    doc = busy({"run": {"id": 1}, "results": [{"bench": "pcie.h2d", "params": {}, "case": "c", "status": "ok",
                                              "gbps": {"median": 20.0}, "metadata": {"link": link}}]},
               ("pcie.h2d", {}))
    verdicts = judge(doc, [rules])
    assert contended_failures(verdicts, doc) == []
    assert [v.verdict for v in incomplete_on_contention(verdicts, doc)] == ["FAIL"]


def test_a_result_above_its_peak_fails_however_busy_the_box(tmp_path):
    """Contention slows a case; it never lifts one above its peak: that is a measurement bug."""
    rules = load(tmp_path, rule("floor", "dram.copy", min_fraction_of_peak=0.5))
    row = {"bench": "dram.copy", "params": {}, "case": "c", "status": "ok", "gbps": {"median": 30.0},
           "efficiency": 1.5, "peak_gbps": 20.0}
    doc = busy({"run": {"id": 1}, "results": [row]}, ("dram.copy", {}))
    verdicts = judge(doc, [rules])
    assert [v.verdict for v in verdicts] == ["FAIL"] and verdicts[0].cases == ("c",)
    assert contended_failures(verdicts, doc) == []
    assert [v.verdict for v in incomplete_on_contention(verdicts, doc)] == ["FAIL"]
