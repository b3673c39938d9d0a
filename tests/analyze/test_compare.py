"""Regression statistics on synthetic samples with known shifts."""

import numpy as np
import pytest

from kvbench.analyze.compare import compare_case, compare_runs, min_p_value
from kvbench.errors import BadInput


def result(median_s, n=9, cv=0.01, seed=0, case="c1", size=10**9):
    rng = np.random.default_rng(seed)
    samples = (median_s * rng.normal(1, cv, n)).tolist()
    med = float(np.median(samples))
    return {"bench": "dram.copy", "params": {"size": size}, "case": case, "status": "ok", "samples_s": samples,
            "gbps": {"median": size / med / 1e9, "p10": 0, "p90": 0}}


def doc(run_id, results, host="h", context="c"):
    return {"run": {"id": run_id, "host_id": host * 8, "context_id": context * 8}, "results": results}


def test_a_ten_percent_slowdown_is_a_regression():
    c = compare_case(result(0.010, seed=1), result(0.011, seed=2))
    assert c.verdict == "regression" and c.change == pytest.approx(-0.09, abs=0.02) and c.p_value < 0.01


def test_a_ten_percent_speedup_is_an_improvement():
    assert compare_case(result(0.011, seed=1), result(0.010, seed=2)).verdict == "improvement"


def test_a_significant_but_small_shift_is_not_gated():
    c = compare_case(result(0.0100, cv=0.001, seed=1), result(0.0102, cv=0.001, seed=2))
    assert c.p_value < 0.01 and c.verdict == "unchanged"  # 2 % is under the 5 % floor


def test_noisy_samples_are_reported_not_gated():
    c = compare_case(result(0.010, cv=0.2, seed=1), result(0.013, cv=0.2, seed=2))
    assert c.verdict == "noisy" and "not gated" in c.note


def test_too_few_samples_cannot_claim_significance():
    assert min_p_value(3, 3) == pytest.approx(0.1)
    c = compare_case(result(0.010, n=3, seed=1), result(0.020, n=3, seed=2))
    assert c.verdict == "too-few-samples"


def test_cases_are_matched_by_id_and_the_rest_reported():
    base = doc(1, [result(0.01, case="a"), result(0.01, case="gone")])
    new = doc(2, [result(0.01, case="a", seed=3), result(0.01, case="fresh")])
    verdicts = {c.case: c.verdict for c in compare_runs(base, new)}
    assert verdicts == {"a": "unchanged", "fresh": "new", "gone": "missing"}


def test_different_hosts_or_contexts_are_refused_unless_asked():
    with pytest.raises(BadInput, match="different hosts.*--cross-host"):
        compare_runs(doc(1, []), doc(2, [], host="x"))
    with pytest.raises(BadInput, match="different contexts"):
        compare_runs(doc(1, []), doc(2, [], context="y"))
    assert compare_runs(doc(1, []), doc(2, [], host="x"), cross_host=True) == []
