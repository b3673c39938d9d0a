"""The acceptance figure and an acceptance run's rate figure (issue 57 item 14): judged rules as bars with
labels whole and values clear of the whisker and the 1.0 line, skipped rules listed compactly below; one
transfer size over several runs is one panel of points per run, every p10–p90 bar inside its panel."""

from __future__ import annotations

import json

from kvbench.analyze.accept.health import health_path, load_health
from kvbench.analyze.accept.judge import rules_for_host
from kvbench.analyze.accept.pipeline import acceptance_verdicts
from kvbench.analyze.accept.profile import gpus_to_match
from kvbench.analyze.case_verdict import Verdict
from kvbench.report import accept_figure, plots
from tests.conftest import FIXTURES
from tests.report.figure_fit import misfits

QUICK = FIXTURES / "runs" / "quick-cpu-vm.json"


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(plots.plt.Text)]


def _verdicts_without_gpus() -> list:
    doc = json.loads(QUICK.read_text())
    facts = doc["host"]["facts"]
    return acceptance_verdicts(doc, rules_for_host(gpus_to_match(facts, None)), None, load_health(health_path(None)))


def test_a_host_without_gpus_draws_its_judged_rules_and_lists_the_skipped_below():
    verdicts = _verdicts_without_gpus()
    judged = [v for v in verdicts if accept_figure.margin(v.value, v.limit, v.limit_max) is not None]
    skipped = {v.rule for v in verdicts} - {v.rule for v in judged}
    assert judged and len(skipped) >= 10
    fig = accept_figure.acceptance_figure(verdicts)
    try:
        ax = fig.axes[0]
        assert len(ax.patches) == len(judged)  # a bar per judged rule, none for a SKIP
        texts = _texts(fig)
        assert not any("…" in t for t in texts), [t for t in texts if "…" in t]
        labels = " ".join(t.get_text().replace("\n", " ") for t in ax.get_yticklabels())
        for v in judged:
            assert v.rule in labels
        listed = " ".join(texts).replace("\n", " ")
        assert all(rule in listed for rule in skipped), skipped
        assert not misfits(fig, 110)
    finally:
        plots.plt.close(fig)


def test_a_value_label_is_clear_of_its_whisker_and_of_the_1_line():
    rows = [Verdict("ratio-rule", "kv.restore", "case", verdict, "x", "≥ 0.8 x", "why", value=value, unit="x",
                    limit=0.8, low=value * 0.9, high=value * 1.1) for verdict, value in (("PASS", 0.82), ("FAIL", 0.78),
                                                                                      ("PASS", 1.9))]
    fig = accept_figure.acceptance_figure(rows)
    try:
        ax = fig.axes[0]
        fig.canvas.draw()
        right = ax.get_window_extent().x1
        values = [t for t in ax.texts if "×" in t.get_text()]
        assert len(values) == 3 and all(t.get_window_extent().x0 >= right for t in values)
    finally:
        plots.plt.close(fig)


def _acceptance_runs(ids=(1, 2, 3)) -> list[dict]:
    doc = json.loads(QUICK.read_text())
    one = [r for r in doc["results"] if r["bench"] == "dram.copy" and r["status"] == "ok"
           and r["params"]["size"] == 256 << 20 and r["params"]["threads"] == 1 and r["params"]["fragment"] == 0]
    out = []
    for n, run in enumerate(ids):
        for r in one:
            g = {k: v * (1 + 0.5 * n) for k, v in r["gbps"].items()}  # a later run faster: its bar above the first's
            out.append({**r, "gbps": g, "run_id": run})
    return out


def test_one_transfer_size_over_several_runs_is_one_panel_of_points_with_bars_inside():
    results = _acceptance_runs()
    fig = plots.bandwidth_vs_size(results, "dram.copy")
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 1
        labels = [t.get_text() for t in panels[0].get_legend().get_texts()]
        assert "all" not in labels
        top = panels[0].get_ylim()[1]
        assert all(r["gbps"]["p90"] <= top for r in results)
        assert [t.get_text() for t in panels[0].get_xticklabels()] == ["run 1", "run 2", "run 3"]
    finally:
        plots.plt.close(fig)


def test_small_multiples_share_an_axis_that_holds_every_panel_s_bars():
    doc = json.loads(QUICK.read_text())
    results = [{**r, "run_id": run, "gbps": {k: v * run for k, v in r["gbps"].items()} if r.get("gbps") else None}
               for run in (1, 2, 3) for r in doc["results"]]
    fig = plots.bandwidth_vs_size(results, "dram.copy")
    try:
        top = max(r["gbps"]["p90"] for r in results if r["bench"] == "dram.copy" and r["status"] == "ok")
        assert all(ax.get_ylim()[1] >= top for ax in fig.axes if ax.get_visible())
    finally:
        plots.plt.close(fig)
