"""Reports keep runs, models, layouts and hosts apart (issue 24 item 6): `plan --model Llama-3.1-70B`
took DeepSeek-V3's request p99 and interpolated across models; a figure or a fit over two runs
mixed their points."""

import pytest

from kvbench.analyze.decide.fit import fit_results
from kvbench.analyze.decide.policy import policies
from kvbench.analyze.decide.restore_plan import measured_models, restore_plan
from kvbench.kv.geometry import get_model

LLAMA = get_model("Llama-3.1-70B")  # 16-token blocks: 32 KiB fragments


def _row(model, fragment, gbps, run, p99=None, strategy="host", layout=("page_first", "layer_first"), host="h"):
    extra = {"fragment_bytes": fragment, "fragments": 1000}
    if p99 is not None:
        extra["request_ms"] = {"p50": p99 / 2, "p90": p99 / 1.5, "p99": p99, "max": p99, "n": 30}
    return {"bench": "kv.restore", "status": "ok", "case_hash": f"{model}{fragment}{strategy}{layout}{run}{host}",
            "gbps_median": gbps, "gbps_p10": gbps * 0.99, "gbps_p90": gbps * 1.01, "peak_gbps": None,
            "peak_source": "no DMI", "run_id": run, "host_id": host, "bytes_per_op": fragment * 1000,
            "median_s": fragment * 1000 / (gbps * 1e9),
            "params": {"model": model, "strategy": strategy, "src": "pageable", "dst": "pageable", "tokens": 1024,
                       "block_tokens": fragment // 2048, "src_layout": layout[0], "dst_layout": layout[1]},
            "extra": extra}


def test_plan_uses_only_the_planned_model_s_rates_and_request_times_and_names_their_runs():
    rows = [_row("DeepSeek-V3", 32768, 50.0, run=1, p99=99.0),  # another model, at exactly the fragment size
            _row("Llama-3.1-70B", 16384, 8.0, run=2, p99=3.0), _row("Llama-3.1-70B", 65536, 12.0, run=2)]
    (tier,) = restore_plan(LLAMA, 4096, "bf16", 1, 16, rows)
    assert tier.measured_gbps == pytest.approx(10.0) and "interpolated" in tier.strategy  # Llama's own points
    assert tier.request_ms["p99"] == 3.0 and tier.request_ms["run_id"] == 2
    assert tier.runs == (2,) and "run 2" in tier.note
    # only another model measured: no plan line, and what was measured is known for the error
    only_other = [_row("DeepSeek-V3", 32768, 50.0, run=1, p99=99.0)]
    assert restore_plan(LLAMA, 4096, "bf16", 1, 16, only_other) == []
    assert measured_models(only_other) == ["DeepSeek-V3"]


def test_plan_keeps_layouts_and_hosts_apart():
    rows = [_row("Llama-3.1-70B", 32768, 10.0, run=1),
            _row("Llama-3.1-70B", 32768, 30.0, run=2, layout=("page_first", "page_first")),
            _row("Llama-3.1-70B", 32768, 20.0, run=3, host="other")]
    tiers = {t.tier: t.measured_gbps for t in restore_plan(LLAMA, 4096, "bf16", 1, 16, rows)}
    assert len(tiers) == 3 and sorted(tiers.values()) == [10.0, 20.0, 30.0]
    assert any("page_first → page_first" in t for t in tiers) and any("on other" in t for t in tiers)


def test_policy_never_mixes_models_and_names_its_runs():
    rows = [_row("Llama-3.1-70B", size, gbps, run=4, strategy=s) for size, gbps, s in
            ((8192, 5.0, "host"), (32768, 9.0, "host"), (8192, 4.0, "host-numpy"), (32768, 8.0, "host-numpy"))]
    rows += [_row("DeepSeek-V3", 16384, 3.0, run=5, strategy="host-numpy"),
             _row("DeepSeek-V3", 16384, 2.0, run=5, strategy="host")]
    found = policies(rows)
    assert [(p.model, p.fragment_bytes, p.strategy, p.runs) for p in found] == [
        ("DeepSeek-V3", (16384, 16384), "host-numpy", (5,)), ("Llama-3.1-70B", (8192, 32768), "host", (4,))]


def test_a_fit_never_mixes_runs():
    def point(run, block_tokens, seconds):
        return {"bench": "kv.restore", "status": "ok", "run_id": run, "bytes_per_op": block_tokens * 1 << 20,
                "median_s": seconds, "params": {"model": "m", "block_tokens": block_tokens},
                "extra": {"fragments": 1000 * (1 + block_tokens % 3)}}

    rows = [point(1, b, 1e-3 * b) for b in (8, 16, 32)] + [point(2, b, 3e-3 * b) for b in (8, 16, 32)]
    fits = {p["run"]: f for p, f in fit_results(rows)}
    assert set(fits) == {1, 2} and all(f is not None and f.points == 3 for f in fits.values())


def test_a_figure_over_two_runs_draws_each_run_as_its_own_series():
    from kvbench.report.plots import bandwidth_vs_size

    def result(run, size, gbps):
        return {"bench": "dram.copy", "status": "ok", "run_id": run, "params": {"size": size, "threads": 1},
                "gbps": {"median": gbps, "p10": gbps, "p90": gbps}, "peak_gbps": None, "metadata": {}}

    results = [result(run, size, gbps) for run, gbps in ((7, 10.0), (9, 5.0)) for size in (1 << 20, 1 << 24)]
    fig = bandwidth_vs_size(results, "dram.copy")
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}  # small multiples: a panel per run (issue 39)
    assert set(panels) == {"run 7", "run 9"}
    drawn = {title: {float(y) for line in ax.get_lines() if len(line.get_xdata()) == 2 for y in line.get_ydata()}
             for title, ax in panels.items()}
    assert drawn == {"run 7": {10.0}, "run 9": {5.0}}  # each run its own line, never one averaged at 7.5

