"""A crosscheck's verdict (issue 23 item 6): the printed goal decides the exit status, and a peer
tool that could not run is INCOMPLETE with its reason, never a silent 0."""

import subprocess

from kvbench.crosscheck.common import Figure, crosscheck_verdict, tool_failed
from kvbench.overall import combine

OURS = Figure("kvbench dram.copy", 15.2, "")
MBW = Figure("mbw MEMCPY", 20.0, "glibc memcpy")
MCBLOCK = Figure("mbw MCBLOCK", 40.0, "write bandwidth, not a copy", comparable=False)


def test_a_ratio_under_the_goal_fails_and_one_within_passes():
    missed = crosscheck_verdict((OURS, [MBW, MCBLOCK]), 0.95)  # 0.76: the figure issue 23 saw exit 0
    assert missed.word == "FAIL" and missed.exit_status() == 1 and "0.76 misses the goal ≥ 0.95" in missed.line
    met = crosscheck_verdict((Figure("kvbench dram.copy", 19.5, ""), [MBW, MCBLOCK]), 0.95)
    assert met.word == "PASS" and "mbw MEMCPY 0.97" in met.line  # the non-comparable peer never counts
    bounded = crosscheck_verdict((Figure("k", 21.0, ""), [MBW]), 0.97, 1.03)
    assert bounded.word == "FAIL" and "1.05 misses the goal 0.97–1.03" in bounded.line
    shown = crosscheck_verdict((OURS, [MBW]), None)  # no goal: shown, never PASS (issue 43.5: 0.17x said PASS)
    assert shown.word == "SHOWN" and shown.exit_status() == 0 and shown.line.startswith("SHOWN: ")
    assert "PASS" not in shown.line and "0.76 (shown, not judged: no goal)" in shown.line


def test_a_side_that_could_not_run_is_incomplete_with_the_reason():
    gone = Figure("ucx_perftest ucp_put_bw", None, "failed: exit status 1; it printed nothing")
    verdict = crosscheck_verdict((OURS, [gone]), None, label="64KiB")
    assert verdict.word == "INCOMPLETE" and verdict.exit_status() == 3
    assert verdict.line == ("INCOMPLETE: 64KiB: no peer tool could run (ucx_perftest ucp_put_bw: failed: exit "
                            "status 1; it printed nothing)")
    ours_gone = crosscheck_verdict((Figure("kvbench pcie.h2d", None, "skipped: no CUDA device"), [MBW]), 0.97)
    assert ours_gone.word == "INCOMPLETE" and "skipped: no CUDA device" in ours_gone.line
    assert crosscheck_verdict((OURS, [MCBLOCK]), 0.95).word == "INCOMPLETE"  # only a peer that is not a copy


def test_several_parts_fail_if_one_fails_and_are_incomplete_if_one_could_not_run():
    fail, incomplete = crosscheck_verdict((OURS, [MBW]), 0.95), crosscheck_verdict((OURS, []), 0.95)
    passed, shown = crosscheck_verdict((OURS, [MBW]), 0.5), crosscheck_verdict((OURS, [MBW]), None)
    for part in (passed, shown):
        assert combine([part, incomplete]).word == "INCOMPLETE"
        assert combine([part, incomplete, fail]).word == "FAIL"
    assert combine([passed]).word == "PASS" and combine([]).word == "INCOMPLETE"
    assert combine([shown, shown]).word == "SHOWN" and combine([shown, shown]).exit_status() == 0
    assert combine([shown, passed]).word == "PASS"  # a part judged and passed, the other shown beside it


def test_a_tool_that_fails_silently_still_gets_a_reason():
    silent = subprocess.CompletedProcess(["ucx_perftest"], 1, stdout="", stderr="")
    assert tool_failed(silent) == "failed: exit status 1; it printed nothing"
    loud = subprocess.CompletedProcess(["fio"], 2, stdout="", stderr="fio: engine io_uring not loadable\n\n")
    assert tool_failed(loud) == "failed: exit status 2; fio: engine io_uring not loadable"
