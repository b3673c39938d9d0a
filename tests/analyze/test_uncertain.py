"""A ratio whose 95 % interval straddles its threshold is re-sampled, then named INCOMPLETE (uncertain)
with both ends; one whose interval clears it keeps its PASS or FAIL (kvbench/analyze/accept/uncertain.py)."""

import numpy as np
import pytest

from kvbench.analyze.accept.judge import judge
from kvbench.analyze.accept.uncertain import RESAMPLE_BUDGET_S, name_uncertain, resample_plan
from kvbench.analyze.accept.verdict import accept_overall
from kvbench.cli import accept_steps
from tests.analyze.rules import kv_ratio, load, quick_run, rule

HOST_CASE = "e9cbdd1c4780b7ac"  # the stored run's kv.restore strategy=host case (block_tokens 16)


def with_ratios(doc, ratios):
    """The stored run with its fragmented kv.restore case's ratio to contiguous measured in the case, pair by pair."""
    for r in doc["results"]:
        if r["case"] == HOST_CASE:
            p10, median, p90 = (float(x) for x in np.percentile(ratios, [10, 50, 90]))
            r["metadata"] = {**(r.get("metadata") or {}), "paired": {
                "against": {"strategy": "contiguous"}, "median": median, "p10": p10, "p90": p90,
                "pairs": len(ratios), "ratios": list(ratios)}}
    return doc


STRADDLING = [0.51, 0.6, 0.7, 0.78, 0.9, 0.95, 0.97, 0.97, 0.98, 0.99, 1.0, 1.01]  # median 0.96, interval 0.70–0.99
CLEAR = [0.95, 0.96, 0.96, 0.97, 0.97, 0.97, 0.98, 0.98, 0.99, 1.0]


@pytest.fixture
def rules(tmp_path):
    return [load(tmp_path, rule("kv-fragments-vs-contiguous", "kv.restore", ratio=kv_ratio(0.8)))]


def test_a_stored_run_s_straddling_ratio_is_incomplete_with_both_ends_and_says_it_was_not_resampled(rules):
    doc = with_ratios(quick_run(), STRADDLING)
    (verdict,) = judge(doc, rules)
    assert verdict.verdict == "PASS"  # what it would have been: a PASS nobody can trust
    (named,) = name_uncertain([verdict], doc, None)
    assert named.verdict == "INCOMPLETE" and named.why.startswith("uncertain: ")
    assert "95 % interval 0.700–0.990" in named.measured and "straddles 0.8 x" in named.why
    assert "not re-sampled" in named.why and "would have been PASS" in named.why
    overall = accept_overall([named], {})
    assert overall.word == "INCOMPLETE" and "uncertain" in overall.line and "contended" not in overall.line


def test_a_ratio_whose_interval_clears_its_threshold_keeps_its_verdict_and_carries_its_interval(rules):
    # issue 57 item 4 (the verdict was returned unchanged, low/high None on a PASS): it keeps its word, and
    # carries its interval as numbers and in its text
    doc = with_ratios(quick_run(), CLEAR)
    verdicts = judge(doc, rules)
    (named,) = name_uncertain(verdicts, doc, None)
    assert named.verdict == verdicts[0].verdict == "PASS" and resample_plan(verdicts, doc) == ([], ())
    assert (named.low, named.high) == (0.96, 0.99) and "95 % interval 0.960–0.990" in named.measured


FIVE = [0.947, 0.923, 0.801, 0.803, 1.175]  # the trial's pairs: median 0.923 x against >= 0.92 x


def test_five_pairs_are_too_few_to_bound_a_ratio_so_it_is_resampled_then_incomplete(tmp_path):
    # issue 57 item 4: below 6 pairs median_ci gives no interval, so nothing straddled: PASS at 0.923 x
    rules = [load(tmp_path, rule("kv-fragments-vs-contiguous", "kv.restore", ratio=kv_ratio(0.92)))]
    doc = with_ratios(quick_run(), FIVE)
    verdicts = judge(doc, rules)
    assert verdicts[0].verdict == "PASS"  # what it would have been
    assert resample_plan(verdicts, doc) == ([HOST_CASE], (0.92,))  # live or --measure-again: re-sampled
    (named,) = name_uncertain(verdicts, doc, None)
    assert named.verdict == "INCOMPLETE" and "5 pairs: too few to bound the ratio" in named.why, named


def test_an_unpaired_ratio_has_no_interval_and_is_left_as_judged(rules):
    doc = quick_run()
    verdicts = judge(doc, rules)
    assert verdicts[0].measured.endswith("(unpaired)") and name_uncertain(verdicts, doc, None) == verdicts


@pytest.mark.parametrize("again,word", [(CLEAR, "PASS"), (STRADDLING, "INCOMPLETE")],
                         ids=["interval-clears-after-resampling", "still-straddling-after-resampling"])
def test_accept_resamples_a_straddling_case_once_then_judges_it_or_names_it_uncertain(rules, monkeypatch, again, word):
    doc = with_ratios(quick_run(), STRADDLING)
    asked = []

    def run_and_show(request, _progress, quiet=False):
        asked.append(request)
        return 2

    monkeypatch.setattr("kvbench.cli.run.run_and_show", run_and_show)
    redo = {"run": {"id": 2, "host_id": doc["run"]["host_id"]},
            "results": [r for r in with_ratios(quick_run(), again)["results"] if r["case"] == HOST_CASE]}
    monkeypatch.setattr(accept_steps, "judged_documents", lambda refs, db: [redo])
    doc2, verdicts, resampled_in = accept_steps.resample_uncertain(doc, judge(doc, rules), rules, "acceptance", None)
    (request,) = asked
    assert request.cases == (HOST_CASE,) and request.max_time_s == RESAMPLE_BUDGET_S
    assert request.ratio_bounds == (0.8,) and request.precision is None  # sampled until clear of 0.8 x
    assert request.tags["resample_of"] == str(doc["run"]["id"]) and resampled_in == 2
    (verdict,) = name_uncertain(verdicts, doc2, resampled_in)
    assert verdict.verdict == word
    if word == "INCOMPLETE":
        assert "after re-sampling in run 2" in verdict.why and "0.700–0.990" in verdict.measured
