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
