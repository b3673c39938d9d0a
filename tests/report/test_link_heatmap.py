"""The report's link matrix ("Which links are slow?"), rendered from runs stored through the store API
as the launcher stores a cluster run (synthetic rates: they test the drawing, they are not measurements)."""

from __future__ import annotations

import base64
import json

import pytest

from kvbench.report import content, link_heatmap, render
from kvbench.store import open_store
from tests.analyze.test_link_matrix import cluster_run
from tests.conftest import FIXTURES, run_cli


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'k.sqlite'}"
    cluster_run(open_store(url))
    return url


def test_a_cluster_run_s_report_draws_the_link_matrix(stored, tmp_path):
    out = tmp_path / "report.html"
    proc = run_cli("report", "1", "--db", stored, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    image = html.split('<img alt="Which links are slow?" src="data:image/png;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n")  # a real image, not a broken one


def test_the_heatmap_marks_slow_links_and_names_pairs_without_a_rate(stored):
    from kvbench.analyze.runs import load_document  # noqa: F401  (documents come as `report` reads them)
    from kvbench.cli.common import documents

    (doc,) = documents(["1"], stored)
    results = [{**r, "run_id": 1} for r in doc["results"]]
    fig = link_heatmap.link_heatmap(results)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]
    assert fig.get_suptitle() == "Which links are slow?"
    assert "4\nSLOW" in texts and "failed" in texts and "missing" in texts
    assert not any(t.startswith("0\n") or t == "0" for t in texts)  # no rate is never drawn as 0
    assert any("rank 3 (node-d) died" in t for t in texts)  # the failed pair's reason is on the figure
    ax = fig.axes[0]
    assert "run 1 · net.write · pairs · 1 slow; most in them: node-a, node-c" == ax.get_title()
    assert [p.get_edgecolor()[:3] for p in ax.patches if not p.get_fill()] == [(1.0, 0.0, 0.0)]  # one outline


def test_a_run_without_cluster_results_has_no_link_figure():
    quick = json.loads((FIXTURES / "runs" / "quick-cpu-vm.json").read_text())
    built = content.build([quick])
    assert link_heatmap.QUESTION not in [f.question for f in built.figures]
    assert link_heatmap.QUESTION not in [q for q, _ in built.omitted]
    assert "Which links" not in render.html(built)



def test_the_question_above_the_panels_does_not_overlap_the_first_panel_s_title(stored):
    """`report` drew "Which links are slow?" across the first panel's own title."""
    store = open_store(stored)
    results = [{"bench": r["bench"], "params": r["params"], "case": r["case_hash"], "status": r["status"],
                "reason": r["reason"], "gbps": {"median": r["gbps_median"]} if r["gbps_median"] else None,
                "metadata": r["extra"], "run_id": r["run_id"]} for r in store.link_results(["net.write"])]
    fig = link_heatmap.link_heatmap(results)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    question = fig._suptitle.get_window_extent(renderer)
    first = fig.axes[0].title.get_window_extent(renderer)
    assert question.y0 >= first.y1, (question, first)


def test_two_launches_share_one_colour_scale_and_add_the_change_matrix_compare_judges(tmp_path):
    """Issue 57 item 15: two runs' matrices were drawn on two colour scales and without the change between
    them. Now one scale, and a panel of new ÷ base per link, each cell with `compare`'s verdict."""
    from kvbench.analyze.links.link_compare import compare_links
    from kvbench.cli.common import documents

    url = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store = open_store(url)
    cluster_run(store)  # run 1: node-c → node-a at 4 GB/s, the rest near 10
    cluster_run(store, slow=("node-b", "node-c"))  # run 2: node-c → node-a back near 10, node-b → node-c at 4
    docs = documents(["1", "2"], url)
    for r in docs[1]["results"]:  # the second launch on a faster network: its own range of rates
        if r.get("gbps"):
            r["gbps"] = {k: v * 1.5 if v is not None else None for k, v in r["gbps"].items()}
    results = [{**r, "run_id": d["run"]["id"]} for d in docs for r in d["results"]]
    fig = link_heatmap.link_heatmap(results)
    try:
        heat = [ax for ax in fig.axes if ax.collections and ax.get_title()]
        assert len(heat) == 3, [ax.get_title() for ax in fig.axes]
        rates = [ax.collections[0] for ax in heat[:2]]
        assert rates[0].get_clim() == rates[1].get_clim()  # one scale
        change = heat[2]
        assert change.get_title().startswith("run 1 → run 2 · net.write")
        texts = [t.get_text() for t in change.texts]
        judged = {(c.params["src_host"], c.params["dst_host"]): c for c in compare_links(*docs)}
        b_c = judged[("node-b", "node-c")]
        assert f"{b_c.new_gbps / b_c.base_gbps:.2f}×\n{b_c.verdict}" in texts
        c_a = judged[("node-c", "node-a")]
        assert any(t.startswith(f"{c_a.new_gbps / c_a.base_gbps:.2f}×") for t in texts)
    finally:
        link_heatmap.plt.close(fig)
