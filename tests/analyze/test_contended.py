"""What contention can and cannot explain in a comparison (issue 37 item 1, issue 43 item 2).
Contention only ever slows a transfer: a drop against a contended base, or a rise against a contended
new run, is at least as real as it looks and keeps its verdict; a change the contended side could fake
is judged on the fast end of the samples and held back (`ambiguous (contended)`) only while that side
was more contended than the other and the change is within what its contention plausibly causes.
Synthetic runs (tests/analyze/test_compare.py's), contention records as kvbench stores them."""

import pytest

from kvbench.analyze.regress.compare import (
    FAST_END,
    MEDIAN,
    compare_case,
    compare_runs,
    has_regression,
    held_back_drops,
)
from kvbench.analyze.regress.contended import AMBIGUOUS_CONTENDED, contention_reasons, plausible_slowdown
from kvbench.benches.describe import describe_params
from kvbench.report.table import comparisons_markdown
from tests.analyze.test_compare import doc, result

BUSY = "other processes used 94% of the CPUs (1.87 of 2): stress (1.50 CPU)"


def contended(row, why=BUSY, load=0.94):
    return {**row, "metadata": {"contention": {"contended": [why], "faults": [],
                                               "host": {"others_cpu_fraction": load}}}}


def clean(row):
    return {**row, "metadata": {"contention": {"contended": [], "faults": [], "host": {"others_cpu_fraction": 0.01}}}}


def slow_tail(gbps_fast, gbps_median, case="c1"):
    """A contended run whose fastest samples reached `gbps_fast` while a neighbour dragged its median
    down to `gbps_median`."""
    return contended({"bench": "dram.copy", "params": {"size": 10**9}, "case": case, "status": "ok",
                      "gbps": {"median": gbps_median, "p10": gbps_median * 0.7, "p90": gbps_fast}})


@pytest.mark.parametrize("factor", [1 / 0.48, 10.0, 100.0])
def test_a_drop_against_a_contended_base_is_at_least_as_real_as_it_looks(factor):
    # issue 43 item 2: a quiet new run 10x or 100x slower than a contended base was INCOMPLETE
    c = compare_case(contended(result(10.0, seed=1)), clean(result(10.0 / factor, seed=2)))
    assert c.verdict == "slower" and has_regression([c]) and not held_back_drops([c]), c.note
    assert "at least as large as it looks" in c.note and c.estimator == MEDIAN


@pytest.mark.parametrize("factor", [10.0, 100.0])
def test_a_drop_far_beyond_any_plausible_contention_is_slower_however_contended_the_new_run(factor):
    c = compare_case(clean(result(10.0, seed=1)), contended(result(10.0 / factor, seed=2)))
    assert c.verdict == "slower" and not held_back_drops([c]), c.note
    assert c.estimator == FAST_END and "beyond the 8.0× its contention can explain" in c.note


def test_a_drop_the_new_run_s_contention_can_explain_is_held_back():
    c = compare_case(clean(result(10.0, seed=1)), contended(result(4.8, seed=2)))  # -52 %, the new run busy
    assert c.verdict == AMBIGUOUS_CONTENDED and not has_regression([c]) and held_back_drops([c]) == [c]
    assert c.note.startswith("slower on the fast end, but the new run was more contended (new contended: "
                             f"{BUSY}), which can explain up to 8.0× slower; re-measure.")


BESIDE_THE_HOG = [10.3, 9.8, 10.1]  # three earlier runs' fast ends, all beside the same neighbour


def test_two_runs_beside_one_steady_neighbour_are_judged_on_the_fast_end():
    # both runs beside the same 2-process hog: the drop is the code's, not the neighbour's
    c = compare_case(contended(result(10.0, seed=1), load=0.66), contended(result(5.8, seed=2), load=0.68),
                     history=BESIDE_THE_HOG)
    assert c.verdict == "slower" and c.estimator == FAST_END and "the new run no more contended than the other" in c.note
    same = compare_case(contended(result(10.0, seed=1), load=0.66), contended(result(9.9, seed=2), load=0.70),
                        history=BESIDE_THE_HOG)
    assert same.verdict == "same" and not has_regression([same]) and not held_back_drops([same])


def test_a_contended_drop_is_not_judged_against_an_assumed_allowance():
    # measured on the dev VM (benchmarks/compare_power.py, other engineers' load): identical runs 1 and 2
    # of a case moved -54 % on the fast end, both sides "equally" contended, and nothing measured how
    # this busy box varies: held back, not `slower`, until 3 runs exist
    c = compare_case(contended(result(10.0, seed=1), load=0.55), contended(result(4.6, seed=2), load=0.64))
    assert c.verdict == AMBIGUOUS_CONTENDED and held_back_drops([c]) == [c]
    assert "fewer than 3 earlier runs the noise of this busy box is unknown" in c.note
    far = compare_case(contended(result(10.0, seed=1), load=0.55), contended(result(1.0, seed=2), load=0.64))
    assert far.verdict == "slower"  # 10x: beyond the 2.8x its contention can explain


def test_a_slow_tail_a_neighbour_caused_is_not_a_drop():
    # the new run's median dragged 40 % down while its fastest samples are where the base's were
    c = compare_case(clean(result(10.0, seed=1)), slow_tail(10.1, 6.0))
    assert c.estimator == FAST_END and c.verdict == "same" and c.change == pytest.approx(6.0 / c.base_gbps - 1)
    assert not held_back_drops([c])


def test_a_rise_against_a_contended_base_is_held_back_and_one_against_a_contended_new_run_is_real():
    c = compare_case(contended(result(4.8, seed=1)), clean(result(10.0, seed=2)))
    assert c.verdict == AMBIGUOUS_CONTENDED and "faster on the fast end, but the base run was more contended" in c.note
    assert not held_back_drops([c])  # a rise never gates
    c = compare_case(clean(result(4.8, seed=1)), contended(result(10.0, seed=2)))
    assert c.verdict == "faster" and "the rise is at least as large as it looks" in c.note


def test_plausible_contention_is_the_share_of_the_box_left_between_a_halving_and_eight_times():
    assert plausible_slowdown(clean(result(1.0))) == 1.0
    assert plausible_slowdown(contended(result(1.0), load=0.12)) == 2.0
    assert plausible_slowdown(contended(result(1.0), load=0.75)) == pytest.approx(4.0)
    assert plausible_slowdown(contended(result(1.0), load=0.99)) == 8.0


@pytest.mark.parametrize("side", ["base", "new"])
def test_require_quiet_holds_back_a_change_its_contended_faking_side_explains(side):
    base, new = clean(result(10.0, seed=1)), clean(result(4.8, seed=2))  # -52 %, ranges apart: slower when clean
    assert compare_case(base, new, require_quiet=True).verdict == "slower"
    base, new = (contended(base), new) if side == "base" else (base, contended(new))
    c = compare_case(base, new, require_quiet=True)
    if side == "base":  # issue 57 item 1 (was held back): a contended base only looked slower, so the drop gates
        assert c.verdict == "slower" and not held_back_drops([c]), c.note
        return
    assert c.verdict == AMBIGUOUS_CONTENDED and held_back_drops([c]) == [c] and c.estimator == MEDIAN
    assert c.note.startswith(f"slower if the box had been quiet, but {side} contended: {BUSY}; --require-quiet")


def test_require_quiet_holds_back_a_drop_within_the_noise_of_a_contended_run():
    c = compare_case(contended(result(10.0, spread=0.5, seed=3)), clean(result(6.0, spread=0.5, seed=4)),
                     require_quiet=True)
    assert c.verdict == AMBIGUOUS_CONTENDED and held_back_drops([c]) == [c]
    assert compare_case(contended(result(10.0, spread=0.5, seed=3)), clean(result(6.0, spread=0.5, seed=4))).verdict \
        == "ambiguous"  # by default: within the noise is shown, not gated, and not held


@pytest.mark.parametrize("base,new,verdict", [(10.0, 10.1, "same"), (9.05, 10.0, "ambiguous")])
def test_contention_does_not_change_a_verdict_that_is_not_a_change(base, new, verdict):
    c = compare_case(contended(result(base, seed=1)), contended(result(new, seed=2)))
    assert c.verdict == verdict


def test_results_without_a_contention_record_keep_their_verdict():
    """Runs stored before contention was recorded (and exports of them) compare as they always did."""
    assert contention_reasons(result(10.0)) == [] and contention_reasons({"metadata": None}) == []
    c = compare_case(result(10.0, seed=1), result(4.8, seed=2))
    assert c.verdict == "slower" and c.estimator == MEDIAN


def test_a_run_compared_under_contention_says_how_many_were_held_back():
    base = doc(1, [clean(result(10.0, seed=1, case="a")), clean(result(10.0, seed=3, case="b"))])
    new = doc(2, [contended(result(4.8, seed=2, case="a")), clean(result(4.8, seed=4, case="b"))])
    comparisons = compare_runs(base, new)
    assert sorted(c.verdict for c in comparisons) == [AMBIGUOUS_CONTENDED, "slower"]
    assert has_regression(comparisons)  # the clean drop still gates
    text = comparisons_markdown(comparisons, "t", describe_params)
    assert "1 slower, 0 lost, 0 missing, 0 ambiguous, 1 ambiguous (contended)" in text
