"""A `--repeat` baseline compared as the median of its runs (kvbench/analyze/regress/pooled.py, issue 37): the
recipe's `run --repeat 3 --tag baseline=1` made three runs, and `compare baseline latest` weighed each job
against the last of them alone, so that run's luck decided whether a drop was caught."""

import json

import numpy as np
import pytest
from rich.console import Console

from kvbench.analyze.regress.compare import case_history
from kvbench.analyze.regress.noise import allowance, allowance_words, between_run_noise, pair_spread
from kvbench.analyze.regress.pooled import batch_run_ids
from kvbench.analyze.runs import run_document
from kvbench.store import open_store
from tests.inproc import run_in_process as cli
from tests.one_case_runs import store_one_case_runs

HOST, CTX, CASE = "test-box-pooled", "p" * 64, "feedfacefeedface"
QUIET = {"contention": {"contended": [], "faults": [], "host": {"others_cpu_fraction": 0.01}}}
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}


def _store_runs(db: str, runs: list[tuple[float, dict]]) -> list[int]:
    """One run per (median GB/s, tags) of one dram.copy case, samples within ±0.2 %; their ids."""
    return store_one_case_runs(db, HOST, CTX, CASE, "acceptance", [(gbps, tags, QUIET) for gbps, tags in runs])


def _batch(rates: list[float], value: str = "1") -> list[tuple[float, dict]]:
    """A `run --repeat N --tag baseline=VALUE` of these medians."""
    return [(g, {"baseline": value, "repeat": f"{i}/{len(rates)}"}) for i, g in enumerate(rates, 1)]


EARLIER = [10.0, 10.1, 9.9, 10.05, 9.95]  # the case's level over earlier runs: ±0.5 %
BATCH = [10.1, 9.9, 8.6]  # the baseline's --repeat 3, its last run 14 % low by luck


def test_the_spread_of_a_change_from_the_median_of_k_runs():
    assert pair_spread(1) == pytest.approx(2 ** 0.5)
    assert pair_spread(3) == pytest.approx(1.449 ** 0.5)  # the median of 3 normal values: variance 0.449
    assert pair_spread(3) < pair_spread(2) < pair_spread(1)
    assert pair_spread(50) == pytest.approx((1 + np.pi / 100) ** 0.5)


def test_a_drop_the_last_baseline_run_s_luck_hid_is_caught_against_the_median_of_its_batch(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [(g, {}) for g in EARLIER] + _batch(BATCH) + [(6.4, {})])  # runs 1-5, 6-8, then a 36 % drop
    proc = cli("compare", "baseline", "latest", "--db", db, "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 1 and c["verdict"] == "slower", c["note"]
    assert c["base_runs"] == [6, 7, 8] and c["base_gbps"] == pytest.approx(9.9)
    assert "base: the median of 3 runs of its --repeat (6, 7, 8)" in c["note"]
    fast = [g * 1.002 for g in EARLIER + BATCH]
    assert c["allowance_ln"] == pytest.approx(allowance(between_run_noise(fast), 0.05, fast, base_runs=3))
    by_id = cli("compare", "8", "9", "--db", db, "--format", "json", env=ENV)  # the runs decide, not how they are named
    assert json.loads(by_id.stdout)["comparisons"][0]["base_runs"] == [6, 7, 8]
    # the same runs, the base a run tagged by hand (no --repeat batch): it alone, and the drop from
    # 8.6 to 6.4 is within a single run's allowance
    single = f"sqlite:///{tmp_path / 'single.sqlite'}"
    _store_runs(single, [(g, {}) for g in EARLIER + BATCH[:2]] + [(BATCH[2], {"baseline": ""}), (6.4, {})])
    proc = cli("compare", "baseline", "latest", "--db", single, "--format", "json", env=ENV)
    (one,) = json.loads(proc.stdout)["comparisons"]
    assert one["base_runs"] is None and one["base_gbps"] == pytest.approx(8.6) and one["verdict"] == "ambiguous", \
        one["note"]


def test_a_baseline_export_carries_its_batch_and_a_fresh_database_pools_it_alike(tmp_path):
    home = f"sqlite:///{tmp_path / 'home.sqlite'}"
    _store_runs(home, [(g, {}) for g in EARLIER] + _batch(BATCH))
    baseline = tmp_path / "baseline.json"
    assert cli("export", "baseline", "-o", str(baseline), "--db", home, env=ENV).returncode == 0
    pool = json.loads(baseline.read_text())["baseline_pool"][CASE]
    assert [e["run"] for e in pool] == [6, 7, 8]
    assert [e["gbps"]["median"] for e in pool] == pytest.approx(BATCH)
    fresh = f"sqlite:///{tmp_path / 'job.sqlite'}"
    _store_runs(fresh, [(6.4, {})])
    proc = cli("compare", str(baseline), "latest", "--db", fresh, "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 1 and c["verdict"] == "slower" and c["base_runs"] == [6, 7, 8], c["note"]
    assert c["base_gbps"] == pytest.approx(9.9) and c["history_runs"] == 8
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(baseline.read_text()), "baseline_pool": {CASE: [{"run": 6}]}}))
    proc = cli("compare", str(bad), "latest", "--db", fresh, env=ENV)
    assert proc.returncode == 2 and "'baseline_pool'" in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_an_export_whose_results_were_edited_and_its_pool_not_is_refused_rather_than_judged_on_the_pool(tmp_path):
    """A drop planted in a baseline export (its rates scaled, as benchmarks/ci_recipe.py does) must reach the
    verdict: a pool that no longer holds the run's own rates would have silently undone the edit."""
    home = f"sqlite:///{tmp_path / 'home.sqlite'}"
    _store_runs(home, [(g, {}) for g in EARLIER] + _batch(BATCH))
    doc = json.loads(cli("export", "baseline", "--db", home, "--format", "json", env=ENV).stdout)
    fresh = f"sqlite:///{tmp_path / 'job.sqlite'}"
    _store_runs(fresh, [(9.9, {})])  # the job: identical to the baseline's median
    for r in doc["results"]:
        r["gbps"] = {k: v / 0.6 for k, v in r["gbps"].items()}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    proc = cli("compare", str(edited), "latest", "--db", fresh, env=ENV)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and "'baseline_pool' does not hold run 8's own rates" in last, proc.stderr
    for entries in doc["baseline_pool"].values():  # the drop planted in every run of the batch
        for e in entries:
            e["gbps"] = {k: v / 0.6 for k, v in e["gbps"].items()}
    # and in its history, which must hold the run's own fast end (issue 57 item 3)
    doc["history"] = {case: [g / 0.6 for g in rates] for case, rates in doc["history"].items()}
    edited.write_text(json.dumps(doc))
    proc = cli("compare", str(edited), "latest", "--db", fresh, "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 1 and c["verdict"] == "slower" and c["base_gbps"] == pytest.approx(9.9 / 0.6)


def test_the_new_run_is_never_part_of_its_own_base(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, _batch([10.0, 10.2, 9.8]))
    proc = cli("compare", "2", "3", "--db", db, "--format", "json", env=ENV)
    assert json.loads(proc.stdout)["comparisons"][0]["base_runs"] == [1, 2]


def test_a_batch_is_its_own_repeat_of_its_own_baseline_tag_and_whole_runs(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ids = _store_runs(db, _batch([10.0, 10.1, 9.9], "old") + _batch([10.0, 10.2], "new")
                      + _batch([9.0, 9.1, 9.2], "new"))  # runs 1-3 'old', 4-5 'new' of 2, 6-8 'new' of 3
    store = open_store(db, read_only=True)
    doc = lambda i: run_document(store, i)["run"]  # noqa: E731
    assert batch_run_ids(store, doc(ids[1])) == [1, 2, 3]
    assert batch_run_ids(store, doc(5)) == [4, 5]
    assert batch_run_ids(store, doc(8)) == [6, 7, 8]
    assert batch_run_ids(store, {**doc(8), "started_at": "2001-01-01T00:00:00+00:00"}) == []  # not this store's run
    store.dispose()
    _store_runs(db, [(10.0, {"repeat": "1/1"})])
    store = open_store(db, read_only=True)
    assert batch_run_ids(store, doc(9)) == [9]  # no baseline tag: no batch
    store.dispose()


def test_the_repeat_table_of_a_baseline_states_the_allowance_compare_gives_against_its_median(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, _batch([10.0, 11.0, 9.5]) + [(10.2, {})])
    from kvbench.cli.run import show_repeats  # what `run --repeat 3 --tag baseline=1` prints at its end

    store = open_store(db, read_only=True)
    console = Console(record=True, width=400)
    show_repeats(store, [1, 2, 3], console)
    history = case_history(store, run_document(store, 4))[CASE]
    store.dispose()
    (c,) = json.loads(cli("compare", "baseline", "latest", "--db", db, "--format", "json", env=ENV).stdout)["comparisons"]
    assert c["base_runs"] == [1, 2, 3]
    words = allowance_words(c["allowance_ln"])
    assert c["allowance_ln"] == pytest.approx(allowance(between_run_noise(history), 0.05, history, 3))
    table = console.export_text()
    assert words in table and "against the median of these 3 (baseline)" in table
    assert words in c["note"]
