import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kvbench.analyze.regress import export
from kvbench.analyze.regress.export import github_action_benchmark, pytest_benchmark
from kvbench.benches import get_bench
from tests.analyze.rules import quick_run


def test_github_action_benchmark_is_bigger_is_better_gbps():
    entries = github_action_benchmark(quick_run())
    assert len(entries) == sum(r["status"] == "ok" for r in quick_run()["results"])
    assert all(e["unit"] == "GB/s" and e["value"] > 0 and e["name"].startswith(("dram.copy", "kv.restore")) for e in entries)


def test_pytest_benchmark_compare_reads_the_export(tmp_path):
    path = tmp_path / "0001_kvbench.json"
    path.write_text(json.dumps(pytest_benchmark(quick_run())))
    beside = Path(sys.executable).parent / "pytest-benchmark"  # the one installed with kvbench's test extra
    exe = str(beside) if beside.exists() else shutil.which("pytest-benchmark")
    proc = subprocess.run([exe, "compare", str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "dram.copy[" in proc.stdout and "kv.restore[" in proc.stdout


def test_dashboard_names_are_short_unique_and_survive_a_new_parameter():
    doc = quick_run()
    names = [e["name"] for e in github_action_benchmark(doc)]
    assert len(set(names)) == len(names) and "dram.copy[size=64MiB,threads=2]" in names
    assert not any("threads=1" in n or "primitive=" in n for n in names)  # defaults are left out
    older = json.loads(json.dumps(doc))  # as a kvbench before `threads` existed stored it
    for r in older["results"]:
        spec = get_bench(r["bench"]).params.get("threads")
        if spec and r["params"].get("threads") == spec.parse("threads", spec.default):
            del r["params"]["threads"]
    assert [e["name"] for e in github_action_benchmark(older)] == names


def test_the_dashboard_export_carries_compare_s_own_allowance_per_case():
    from kvbench.analyze.regress.noise import allowance, between_run_noise

    doc = quick_run()
    first = next(r for r in doc["results"] if r["status"] == "ok")
    history = {first["case"]: [10.0, 14.0, 8.0, 13.0, 7.5]}
    entries = github_action_benchmark(doc, history)
    expected = allowance(between_run_noise(history[first["case"]]))
    assert expected == pytest.approx(np.log(2))  # stated as the drop it allows, not as ±69.3 %
    # issue 57 items 0 and 10 (was "a drop beyond −50.0 % gates"): runs that vary beyond a halving cannot
    # gate, and the export says so, naming the base, as compare does
    assert ("compare: baseline too noisy to gate: re-take it on a quiet box (its runs vary beyond a halving; "
            "against one base run) (5 earlier runs)") in entries[0]["extra"]
    assert all("compare: a drop beyond −13.9 % gates (against one base run) (assumed" in e["extra"]
               for e in entries[1:])


@pytest.mark.parametrize("count", [1, 2, 5, 6, 7, 9, 10, 13])
def test_pytest_benchmark_statistics_are_pytest_benchmark_s_own(count):
    # hostile trial H17: numpy's percentiles gave another IQR (and other outlier counts) than
    # pytest-benchmark computes from the same `data`, so its compare read our IQR column differently
    stats = pytest.importorskip("pytest_benchmark.stats")
    rng = np.random.default_rng(count)
    samples = (1e-3 * rng.lognormal(0.0, 0.3, count)).tolist()
    mine = export._stats(samples)
    theirs = stats.Stats()
    for s in samples:
        theirs.update(s)
    for key in ("q1", "q3", "iqr", "median", "ld15iqr", "hd15iqr"):
        assert mine[key] == pytest.approx(getattr(theirs, key), rel=1e-12), key
    for key in ("iqr_outliers", "stddev_outliers", "outliers", "rounds"):
        assert mine[key] == getattr(theirs, key), key
