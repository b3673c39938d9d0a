"""Every figure kind kvbench draws fits its canvas at the resolutions it writes (110 dpi in reports, 150 in
`kvbench plot`): no title, label or note cut at an edge, no two titles on top of each other, no layout
warning. Drawn from stored runs (the CPU VM's quick and kv-restore runs), a cluster run stored through the
store API, and GPU-shaped rows (synthetic rates: they test the drawing, they are not measurements)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from kvbench.analyze.links.nvbandwidth_shape import nvbandwidth_cases
from kvbench.report import accept_figure, content, history_plot, link_heatmap, nvbandwidth_figure, plots
from kvbench.store import open_store
from tests.analyze.test_nvbandwidth_shape import rows as nvb_rows
from tests.conftest import FIXTURES
from tests.report.figure_fit import misfits
from tests.report.test_gpu_figures import row

DPIS = (110, 150)


def _runs(name: str, ids=(1,)) -> list[dict]:
    doc = json.loads((FIXTURES / "runs" / name).read_text())
    return [{**r, "run_id": run} for run in ids for r in doc["results"]]


def _gpu_rows() -> list[dict]:
    numa = [row("pcie.h2d", rate, memory=f"numa:{node}", gpu=gpu, size=1 << 28)
            for node, gpu, rate in ((0, 0, 54.1), (1, 0, 40.2), (0, 1, 39.8), (1, 1, 53.7))]
    bidir = {**row("pcie.bidir", 101.0, memory="pinned", size=1 << 28),
             "metadata": {"directions_gbps": {"h2d": 51.0, "d2h": 50.0, "sum": 101.0}}}
    together = {**row("pcie.h2d", 150.0, memory="pinned", gpus="all", size=1 << 28), "run_id": 12345,
                "metadata": {"per_gpu_gbps": {str(g): 18.75 for g in range(8)}}}
    singles = [{**row("pcie.h2d", 54.0, memory="pinned", gpus="one", gpu=g, size=1 << 28), "run_id": 12345}
               for g in range(8)]
    return [*numa, bidir, together, *singles]


def _history() -> list:
    from kvbench.analyze.regress.history import Segment

    start = datetime(2026, 12, 1, tzinfo=UTC)
    series = [{"run_id": n, "started_at": start + timedelta(minutes=n), "gbps_median": 20.0 if n < 5 else 10.0,
               "params": {"size": 1 << 28}, "contended": n == 3} for n in range(1, 9)]
    return [(series, [Segment(0, 4, 20.0), Segment(4, 8, 10.0)])]


def _figures(cluster_results: list[dict]) -> dict[str, object]:
    quick, kv = _runs("quick-cpu-vm.json"), _runs("kv-restore-cpu-vm.json")
    return {
        "rate by size, one run": lambda: plots.bandwidth_vs_size(quick, "dram.copy"),
        "rate by size, three runs": lambda: plots.bandwidth_vs_size(_runs("quick-cpu-vm.json", (1, 2, 3)),
                                                                    "dram.copy"),
        "kv strategies": lambda: plots.kv_strategies(kv),
        "kv strategies, two runs": lambda: plots.kv_strategies(_runs("kv-restore-cpu-vm.json", (1, 2))),
        "numa": lambda: plots.numa_heatmap(_gpu_rows()),
        "bidirectional": lambda: plots.bidirectional(_gpu_rows()),
        "all gpus": lambda: plots.all_gpus(_gpu_rows()),
        "history": lambda: history_plot.history_figure("dram.copy", _history()),
        "acceptance": lambda: accept_figure.acceptance_figure(content.build(
            [json.loads((FIXTURES / "runs" / "quick-cpu-vm.json").read_text())]).verdicts),
        "link matrix": lambda: link_heatmap.link_heatmap(cluster_results),
        "nvbandwidth testcases": lambda: nvbandwidth_figure.nvbandwidth_figure(nvbandwidth_cases(nvb_rows(), 2)),
    }


@pytest.fixture(scope="module")
def cluster_results(tmp_path_factory) -> list[dict]:
    from kvbench.cli.common import documents
    from tests.analyze.test_link_matrix import cluster_run

    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'k.sqlite'}"
    cluster_run(open_store(url))
    (doc,) = documents(["1"], url)
    return [{**r, "run_id": 1} for r in doc["results"]]


KINDS = ["rate by size, one run", "rate by size, three runs", "kv strategies", "kv strategies, two runs", "numa",
         "bidirectional", "all gpus", "history", "acceptance", "link matrix", "nvbandwidth testcases"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_figure_kind_fits_its_canvas(kind, cluster_results):
    for dpi in DPIS:
        fig = _figures(cluster_results)[kind]()
        assert fig is not None, kind
        assert misfits(fig, dpi) == [], f"{kind} at {dpi} dpi"
        plots.plt.close(fig)


def test_the_check_sees_a_clipped_title():
    """The check itself: a title wider than its figure is reported, so a pass above means something."""
    fig, ax = plots.plt.subplots(figsize=(3, 2))
    ax.set_title("A question far too long to fit in a figure three inches wide, cut at both edges")
    found = misfits(fig)
    plots.plt.close(fig)
    assert found and found[0].startswith("outside the canvas")


def test_several_runs_are_small_multiples_with_one_colour_per_case():
    fig = plots.bandwidth_vs_size(_runs("quick-cpu-vm.json", (1, 2, 3)), "dram.copy")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["run 1", "run 2", "run 3"]
    colours = [{line.get_label(): line.get_color() for line in ax.get_lines() if not line.get_label().startswith("_")}
               for ax in panels]
    assert colours[0] == colours[1] == colours[2] and len(colours[0]) <= 4  # the cases, not cases × runs
    assert all(ax.get_ylim()[0] == 0 for ax in panels)


def test_a_report_of_two_runs_of_a_case_holds_its_history_with_compare_s_allowance():
    """Issue 39: no report contained a history figure, even with --baseline."""
    first = json.loads((FIXTURES / "runs" / "quick-cpu-vm.json").read_text())
    second = json.loads(json.dumps(first))
    second["run"]["id"], second["run"]["started_at"] = 2, "2026-12-02T10:00:00+00:00"
    built = content.build([second], baseline=first)
    history = [f for f in built.figures if f.question == "Has dram.copy held its level on this host, run after run?"]
    assert len(history) == 1
    (bench, found, allowances), *_ = content.history_series([first, second], built.comparisons)
    assert bench == "dram.copy" and all(len(series) == 2 for series, _ in found)
    assert allowances and all(a is not None and a > 0 for a in allowances)  # compare's own, case by case
    alone = content.build([first])
    assert not [f for f in alone.figures if f.question.startswith("Has ")]  # one run: no history to draw


def test_a_poor_fit_is_flagged_in_the_tables_and_the_json():
    """Issue 39: `fit` printed α, β at R² 0.199 without a warning."""
    from rich.console import Console

    from kvbench.analyze.decide.fit import TransferFit
    from kvbench.report.analysis_tables import fit_table
    from kvbench.report.json_docs import fit_doc

    fits = [({"bench": "kv.restore", "model": "m"}, TransferFit(1.5, 20.0, 0.199, 5)),
            ({"bench": "kv.restore", "model": "n"}, TransferFit(1.5, 20.0, 0.97, 5))]
    console = Console(width=160, record=True, color_system=None)
    console.print(fit_table(fits, 1))
    text = console.export_text()
    assert text.count("poor fit: R² < 0.9") == 1 and "0.199" in text
    assert [f["fit"]["poor"] for f in fit_doc(1, fits)["fits"]] == [True, False]


def test_the_acceptance_figure_draws_an_uncertain_ratio_s_interval_across_its_threshold():
    """Issue 39 item 1: uncertain intervals drawn; a rule that judged no number is named, never a bar at 0."""
    from kvbench.analyze.accept.judge import Verdict

    uncertain = Verdict("kv-fragments-vs-contiguous", "kv.restore", "tokens=1024", "INCOMPLETE", "0.854 x", "≥ 0.8 x",
                        "uncertain: …", value=0.854, unit="x", limit=0.8, low=0.262, high=1.563)
    skipped = Verdict("hbm-read", "hbm.read", "all", "SKIP", "-", "≥ 85% of peak", "no CUDA device", unit="fraction of peak",
                      limit=0.85)
    fig = accept_figure.acceptance_figure([uncertain, skipped])
    ax = fig.axes[0]
    spans = [line.get_xdata() for line in ax.get_lines() if line.get_color() == "black" and len(line.get_xdata()) == 2
             and line.get_linestyle() == "-"]
    assert [(round(a, 3), round(b, 3)) for a, b in spans] == [(round(0.262 / 0.8, 3), round(1.563 / 0.8, 3))]
    assert len(ax.patches) == 1  # one bar: the SKIP is words, not a bar of 0
    # named in the list below the axis (issue 57 item 14; it was a line of the axis)
    assert any("SKIP (1) — no CUDA device: hbm-read" in t.get_text() for t in fig.findobj(plots.plt.Text))
    assert misfits(fig) == []
