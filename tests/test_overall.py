"""The one overall verdict and its exit status (DESIGN.md, Verdicts), and a run's verdict: never a
PASS on silence."""

from kvbench.errors import CheckFailed
from kvbench.overall import FAIL, INCOMPLETE, PASS, Concluded, Overall, decide, run_overall
from kvbench.report.table import status_line


def test_the_word_comes_first_and_maps_to_0_1_3():
    assert decide([], []).line == "PASS" and decide([], []).exit_status() == 0
    fail = decide(["2 case(s) failed rule x"], ["1 GPU rule(s) not judged"])
    assert fail.word == FAIL and fail.exit_status(allow_incomplete=True) == 1
    assert fail.line == "FAIL: 2 case(s) failed rule x; 1 GPU rule(s) not judged"
    incomplete = decide([], ["nothing was judged"], ["0 rule(s) passed"])
    assert incomplete.line == "INCOMPLETE: nothing was judged" and incomplete.exit_status() == 3
    assert incomplete.exit_status(allow_incomplete=True) == 0
    assert incomplete.to_json() == {"verdict": INCOMPLETE, "reasons": ["nothing was judged"], "exit_status": 3}


def test_a_run_fails_on_a_failed_case_is_incomplete_when_nothing_was_measured_and_passes_otherwise():
    assert run_overall(["ok", "failed", "skipped"], 1, "run 4").line == "FAIL: run 4: 1 case(s) failed"
    assert run_overall(["skipped", "skipped"], 0, "run 4").line == "INCOMPLETE: run 4 measured nothing: all 2 case(s) skipped"
    assert run_overall([], 0, "run 4").word == INCOMPLETE
    assert run_overall(["ok", "skipped"], 0, "run 4").word == PASS


def test_concluded_is_a_failed_check_with_the_verdict_s_status():
    exc = Concluded(Overall(INCOMPLETE, ("run 2 measured nothing",)))
    assert isinstance(exc, CheckFailed) and exc.exit_code == 3 and str(exc) == "run 2 measured nothing"
    assert Concluded(Overall(FAIL, ("x",))).exit_code == 1


def test_a_run_table_closes_with_its_counts_and_the_skip_reasons_commonest_first():
    rows = [{"status": "ok"}, {"status": "failed", "reason": "integrity"},
            *[{"status": "skipped", "reason": "no CUDA device"}] * 3, {"status": "skipped", "reason": "no NIXL"}]
    assert status_line(rows) == "1 ok · 1 failed · 4 skipped (reasons: no CUDA device ×3; no NIXL)"
    assert status_line([{"status": "ok"}]) == "1 ok · 0 failed · 0 skipped"
    many = [{"status": "skipped", "reason": f"r{i}"} for i in range(6)]
    assert status_line(many).endswith("r0; r1; r2; r3; 2 more)")
