"""Issue 57 item 11: `history` cuts no level at a contended run, and each run's verdict agrees with the
number printed beside it, or says why (`ranges overlap`). Synthetic stored runs of one case."""

import json

from kvbench.store import open_store
from tests.inproc import run_in_process as cli
from tests.one_case_runs import FACTS

HOST, CTX, CASE = "test-box-i57-11", "9" * 64, "1111999911119999"
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}
BUSY = {"contention": {"contended": ["other processes used 88% of the CPUs (1.76 of 2)"], "faults": [],
                       "host": {"others_cpu_fraction": 0.88}}}


def _store(db: str, runs: list[tuple[float, float, float, dict]]) -> None:
    """One run per (p10, median, p90 GB/s, extra) of one 1 MiB dram.copy case."""
    store = open_store(db)
    store.ensure_host(HOST, "box", FACTS)
    store.ensure_context(CTX, {"numpy": "2"})
    for p10, median, p90, extra in runs:
        run = store.begin_run(host_id=HOST, context_id=CTX, suite="quick", suite_hash="abc", kvbench_version="0.1",
                              git_sha=None, git_dirty=None, tags={}, system_state={})
        seconds = (1 << 20) / median / 1e9
        store.add_result(run, {"bench": "dram.copy", "params": {"size": 1 << 20, "threads": 1}, "case_hash": CASE,
                               "bytes_per_op": 1 << 20, "median_s": seconds, "gbps_median": median, "gbps_p10": p10,
                               "gbps_p90": p90, "verified": True, "status": "ok", "warnings": [], "extra": extra},
                         [seconds] * 5)
        store.finish_run(run, "complete")
    store.dispose()


def _quiet(g: float) -> tuple[float, float, float, dict]:
    return (g * 0.998, g, g * 1.002, {})


def _history(db: str) -> tuple[dict, str]:
    doc = json.loads(cli("history", "dram.copy", "--db", db, "--json", "-", env=ENV).stdout)
    return doc["cases"][0], cli("history", "dram.copy", "--db", db, env=ENV).stdout


def test_contended_runs_never_start_a_level(tmp_path):
    # two contended runs at 60 % of identical code's level cut it into three level segments
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    busy = [(g * 0.9, g, 10.0, BUSY) for g in (6.0, 6.1)]
    _store(db, [_quiet(10.0), _quiet(10.1), _quiet(9.9), *busy, _quiet(10.0), _quiet(10.05)])
    case, _text = _history(db)
    assert len(case["segments"]) == 1, case["segments"]
    assert [r["contended"] for r in case["runs"]] == [False] * 3 + [True] * 2 + [False] * 2


def test_a_verdict_prints_the_number_it_judged(tmp_path):
    # `same +47.6 %`: a contended base's median, while the verdict judged the fast end (+0.2 %)
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store(db, [_quiet(10.0), _quiet(10.1), _quiet(9.9), (6.0, 6.775, 10.0, BUSY), _quiet(10.0)])
    case, text = _history(db)
    last = case["runs"][-1]
    assert last["verdict"] == "same" and abs(last["judged_change"]) < 0.05, last
    assert "same +47.6" not in text and "same +0.2% on the fast end (median +47.6%)" in text, text


def test_an_ambiguous_change_beyond_its_allowance_says_the_ranges_overlap(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store(db, [_quiet(10.0), _quiet(10.1), _quiet(9.9), (9.0, 10.0, 10.02, {}), (6.5, 8.0, 9.5, {})])
    case, text = _history(db)
    assert case["runs"][-1]["verdict"] == "ambiguous", case["runs"][-1]
    assert "ambiguous -20.0% (ranges overlap" in text, text
