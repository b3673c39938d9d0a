"""`kvbench crosscheck net --transport mooncake`: kvbench's checked net.write over Mooncake beside
the wheel's own transfer_engine_bench, at the same block size, batch and one submitting thread."""

from pathlib import Path

from kvbench.backends.mooncake import mooncake_unavailable_reason
from tests.conftest import run_cli


def test_kvbench_and_transfer_engine_bench_are_printed_with_their_ratio_and_goal(mooncake_env):
    done = run_cli("crosscheck", "net", "--transport", "mooncake", "--size", "64KiB", "--batch", "8", "--duration",
                   "2", env={**mooncake_env, "COLUMNS": "250"}, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]  # PASS or FAIL: a ratio was judged
    assert "transfer_engine_bench write 64KiB x 8" in done.stdout and "goal 0.90–1.10" in done.stdout
    assert "bytes not checked" in done.stdout and "every byte checked" in done.stdout
    verdict = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(("PASS", "FAIL"))]
    assert verdict and "kvbench / transfer_engine_bench" in verdict[-1], done.stdout[-1000:] + done.stderr[-1000:]


def test_without_mooncake_s_driver_it_is_incomplete_with_the_reason():
    reason = mooncake_unavailable_reason()
    if reason is None:
        import pytest

        pytest.skip("Mooncake loads in this process (a CUDA driver is present)")
    done = run_cli("crosscheck", "net", "--transport", "mooncake", "--size", "64KiB", env={"COLUMNS": "250"})
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    text = done.stdout + done.stderr
    # the reason this process gives (no CUDA driver: libcuda.so.1; or the wheel not installed) is the one named
    assert "INCOMPLETE" in text and reason[:40] in text, text[-2000:]


def test_a_wheel_without_the_tool_is_said_so(monkeypatch, tmp_path):
    import kvbench.crosscheck.mooncake as crosscheck

    monkeypatch.setattr(crosscheck, "tool_path", lambda: None)
    figure = crosscheck.transfer_engine_bench(65536, 8, 1, 1, Path(tmp_path))
    assert figure.gbps is None and "not shipped in the installed Mooncake wheel" in figure.note


def test_a_bad_transport_is_refused_in_one_line():
    done = run_cli("crosscheck", "net", "--transport", "ucx")
    assert done.returncode == 2 and "bad --transport 'ucx'" in done.stderr and len(done.stderr.strip().splitlines()) == 1
