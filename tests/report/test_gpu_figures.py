"""The GPU figures draw from result rows of the shape the GPU benchmarks store.

The rates here are test inputs for the plotting code, not measurements.
"""

from kvbench.report import plots


def row(bench, gbps, **params):
    return {"bench": bench, "status": "ok", "params": params, "gbps": {"median": gbps, "p10": gbps, "p90": gbps},
            "peak_gbps": 63.0}


def test_numa_heatmap_is_node_by_gpu():
    results = [row("pcie.h2d", rate, memory=f"numa:{node}", gpu=gpu, size=1 << 28)
               for node, gpu, rate in ((0, 0, 1.0), (1, 0, 0.5), (0, 1, 0.5), (1, 1, 1.0))]
    fig = plots.numa_heatmap(results)
    assert fig is not None and "NUMA" in fig.get_suptitle()
    assert plots.numa_heatmap(results[:1]) is None  # one node: no matrix


def test_figures_over_two_runs_keep_each_run_apart():
    # issue 24 item 6: two runs' rates were averaged into one cell, one bar, or singles of another run
    numa = [{**row("pcie.h2d", rate * run, memory=f"numa:{node}", gpu=0, size=1 << 28), "run_id": run}
            for run in (1, 2) for node, rate in ((0, 1.0), (1, 0.5))]
    fig = plots.numa_heatmap(numa)
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["run 1", "run 2"]
    bidir = [{**row("pcie.bidir", 2.0 * run, memory="pinned", size=1 << 28), "run_id": run,
              "metadata": {"directions_gbps": {"h2d": 1.0 * run, "d2h": 1.0 * run, "sum": 2.0 * run}}} for run in (1, 2)]
    labels = [t.get_text() for t in plots.bidirectional(bidir).axes[0].get_legend().get_texts()]
    assert "run 1 both: sum" in labels and "run 2 both: sum" in labels
    together = {**row("pcie.h2d", 100.0, memory="pinned", gpus="all", size=1 << 28), "run_id": 2,
                "metadata": {"per_gpu_gbps": {"0": 50.0, "1": 50.0}}}
    singles = [{**row("pcie.h2d", rate, memory="pinned", gpus="one", gpu=g, size=1 << 28), "run_id": run}
               for run, rate in ((2, 54.0), (1, 10.0)) for g in range(2)]
    title = plots.all_gpus([together, *singles]).axes[0].get_title()
    assert "run 2" in title and "singles sum 108.0" in title  # run 2's singles, not run 1's


def test_bidirectional_bars_need_a_bidir_result():
    alone = [row("pcie.h2d", 1.0, memory="pinned", size=1 << 28)]
    assert plots.bidirectional(alone) is None
    both = {**row("pcie.bidir", 2.0, memory="pinned", size=1 << 28),
            "metadata": {"directions_gbps": {"h2d": 1.0, "d2h": 1.0, "sum": 2.0}}}
    assert plots.bidirectional([*alone, both]) is not None
    both["metadata"]["paired"] = {"against": {"bench": "pcie.h2d"}, "median": 1.9, "p10": 1.8, "p90": 2.0,
                                  "against_gbps": {"median": 1.05}}
    labels = [t.get_text() for t in plots.bidirectional([both]).axes[0].get_legend().get_texts()]
    assert "alone: H2D (paired, same case)" in labels  # the twin timed beside both directions


def test_all_gpus_figure_compares_with_the_singles():
    together = {**row("pcie.h2d", 150.0, memory="pinned", gpus="all", size=1 << 28),
                "metadata": {"per_gpu_gbps": {"0": 50.0, "1": 50.0, "2": 25.0, "3": 25.0}}}
    singles = [row("pcie.h2d", 54.0, memory="pinned", gpus="one", gpu=g, size=1 << 28) for g in range(4)]
    fig = plots.all_gpus([together, *singles])
    assert fig is not None and "singles sum 216.0" in fig.axes[0].get_title()
    assert plots.all_gpus(singles) is None


def test_the_near_far_table_is_in_both_renderings_when_a_numa_sweep_exists():
    from kvbench.analyze.accept.numa_ratio import near_far
    from kvbench.report import render
    from kvbench.report.content import ReportContent

    results = [{**row("pcie.h2d", rate, memory=f"numa:{node}", gpu=0, size=1 << 28), "metadata": {"gpu_numa_node": 0}}
               for node, rate in ((0, 55.0), (1, 27.5))]
    built = ReportContent(title="numa", runs=[], host=None, results=[], numa=near_far(results))
    assert "| 0 | 256MiB | 0 | 55.0 | 1 | 27.5 | 0.50 (unpaired) |" in render.markdown(built)
    far = {**results[1], "metadata": {"gpu_numa_node": 0, "paired": {
        "against": {"memory": "numa:0"}, "median": 0.6, "p10": 0.55, "p90": 0.65, "against_gbps": {"median": 50.0}}}}
    paired = ReportContent(title="numa", runs=[], host=None, results=[], numa=near_far([far]))
    assert "| 0 | 256MiB | 0 | 50.0 | 1 | 27.5 | 0.60 paired |" in render.markdown(paired)
    assert "<h2>NUMA near vs far (pcie.h2d)</h2>" in render.html(built)
    assert "NUMA near vs far" not in render.markdown(ReportContent(title="none", runs=[], host=None, results=[]))


def test_the_pageable_over_pinned_table_is_in_both_renderings():
    from kvbench.analyze.accept.pinned_ratio import pageable_vs_pinned
    from kvbench.report import render
    from kvbench.report.content import ReportContent

    results = [row("pcie.h2d", rate, memory=memory, gpu=0, size=1 << 28, engine="ce", backend="cupy")
               for memory, rate in (("pinned", 55.0), ("pageable", 22.0))]
    built = ReportContent(title="p", runs=[], host=None, results=[], pageable=pageable_vs_pinned(results))
    assert "| pcie.h2d | 0 | 256MiB | cupy | 55.0 | 22.0 | 0.40 |" in render.markdown(built)
    assert "<h2>Pageable vs pinned host memory</h2>" in render.html(built)


def test_hbm_rows_of_size_0_are_drawn_at_the_buffer_they_used():
    # size=0 means "max(8 x L2, 1 GiB)": the buffer really used is in the metadata
    results = [{**row("hbm.read", 4000.0, size=0, gpu=0), "metadata": {"buffer_bytes": 1 << 30}},
               {**row("hbm.read", 3000.0, size=1 << 28, gpu=0), "metadata": {"buffer_bytes": 1 << 28}}]
    fig = plots.bandwidth_vs_size(results, "hbm.read")
    assert fig is not None
    assert list(fig.axes[0].get_xticks()) == [1 << 28, 1 << 30]


def test_a_figure_that_cannot_be_drawn_is_omitted_with_its_reason_not_the_report(monkeypatch):
    from kvbench.report import content, render
    from tests.report.test_report import docs

    def broken(results, bench):
        raise ValueError("Data cannot be log-scaled\nmore")

    monkeypatch.setattr(plots, "bandwidth_vs_size", broken)
    built = content.build(docs()[:1])
    assert ("How fast does dram.copy move bytes, by transfer size?", "ValueError: Data cannot be log-scaled") \
        in built.omitted
    assert "Figure omitted: How fast does dram.copy" in render.markdown(built)
    assert "could not be drawn: ValueError" in render.html(built)
