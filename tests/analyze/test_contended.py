"""A change between two runs whose case was measured under contention on either side is
`ambiguous (contended)` — shown, never gated — instead of `slower` or `faster`; a clean pair keeps
its verdict. Synthetic runs (tests/analyze/test_compare.py's), contention records as kvbench stores them."""

import pytest

from kvbench.analyze.compare import compare_case, compare_runs, has_regression, held_back_drops
from kvbench.analyze.contended import AMBIGUOUS_CONTENDED, contention_reasons
from kvbench.benches.describe import describe_params
from kvbench.report.table import comparisons_markdown
from tests.analyze.test_compare import doc, result

BUSY = "other processes used 94% of the CPUs (1.87 of 2): stress (1.50 CPU)"


def contended(row, why=BUSY):
    return {**row, "metadata": {"contention": {"contended": [why], "faults": [], "host": {"others_cpu_fraction": 0.94}}}}


def clean(row):
    return {**row, "metadata": {"contention": {"contended": [], "faults": [], "host": {"others_cpu_fraction": 0.01}}}}


@pytest.mark.parametrize("side", ["base", "new"])
def test_a_drop_measured_under_contention_on_either_side_is_ambiguous_not_slower(side):
    base, new = clean(result(10.0, seed=1)), clean(result(4.8, seed=2))  # -52 %, ranges apart: slower when clean
    assert compare_case(base, new).verdict == "slower"
    base, new = (contended(base), new) if side == "base" else (base, contended(new))
    c = compare_case(base, new)
    assert c.verdict == AMBIGUOUS_CONTENDED and not has_regression([c])
    assert c.note.startswith(f"slower if the box had been quiet, but {side} contended: {BUSY}; re-measure.")


def test_a_rise_against_a_contended_base_is_not_called_faster():
    c = compare_case(contended(result(4.8, seed=1)), clean(result(10.0, seed=2)))
    assert c.verdict == AMBIGUOUS_CONTENDED and "faster if the box had been quiet" in c.note


@pytest.mark.parametrize("base,new,verdict", [(10.0, 10.1, "same"), (9.05, 10.0, "ambiguous")])
def test_contention_does_not_change_a_verdict_that_is_not_a_change_or_a_rise(base, new, verdict):
    c = compare_case(contended(result(base, seed=1)), contended(result(new, seed=2)))
    assert c.verdict == verdict


def test_a_drop_within_the_noise_of_a_contended_run_is_held_back_not_passed():
    # measured beside a 2-process CPU hog (benchmarks/compare_power.py): 40 % drops came out `ambiguous`
    # (the hog's noise made the ranges overlap), so `compare` passed them; now they are not judged
    c = compare_case(contended(result(10.0, spread=0.5, seed=3)), clean(result(6.0, spread=0.5, seed=4)))
    assert c.verdict == AMBIGUOUS_CONTENDED and not has_regression([c])
    assert c.note.startswith(f"a drop within the noise, but base contended: {BUSY}")
    assert held_back_drops([c]) == [c]  # compare ends INCOMPLETE on it, never PASS
    assert compare_case(clean(result(10.0, spread=0.5, seed=3)), clean(result(6.0, spread=0.5, seed=4))).verdict \
        == "ambiguous"  # the same pair measured on a quiet box: within the noise, shown, not gated


def test_results_without_a_contention_record_keep_their_verdict():
    """Runs stored before contention was recorded (and exports of them) compare as they always did."""
    assert contention_reasons(result(10.0)) == [] and contention_reasons({"metadata": None}) == []
    assert compare_case(result(10.0, seed=1), result(4.8, seed=2)).verdict == "slower"


def test_a_run_compared_under_contention_exits_clean_and_says_how_many_were_contended():
    base = doc(1, [clean(result(10.0, seed=1, case="a")), clean(result(10.0, seed=3, case="b"))])
    new = doc(2, [contended(result(4.8, seed=2, case="a")), clean(result(4.8, seed=4, case="b"))])
    comparisons = compare_runs(base, new)
    assert sorted(c.verdict for c in comparisons) == [AMBIGUOUS_CONTENDED, "slower"]
    assert has_regression(comparisons)  # the clean drop still gates
    text = comparisons_markdown(comparisons, "t", describe_params)
    assert "1 slower, 0 lost, 0 missing, 0 ambiguous, 1 ambiguous (contended)" in text
