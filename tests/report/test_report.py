"""Reports rendered from stored real runs (tests/fixtures/runs/), checked in a real browser."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kvbench.report import content, history_plot, plots, render

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


def docs():
    return [json.loads((RUNS / name).read_text()) for name in ("quick-cpu-vm.json", "kv-restore-cpu-vm.json")]


@pytest.fixture(scope="module")
def built():
    quick, kv = docs()
    return content.build([quick, kv], baseline=quick)


def test_report_answers_each_question_it_has_data_for(built):
    questions = [f.question for f in built.figures]
    assert "How fast does dram.copy move bytes, by transfer size?" in questions
    assert "How close does each KV strategy get to one contiguous copy, by fragment size?" in questions
    assert built.missing == [] and built.no_gpu.startswith("GPU paths were not measured: this host has no GPU")
    assert any(fit and fit.alpha_us > 0 for _, fit in built.fits)
    assert built.plan and built.plan[0].tier == "DRAM → DRAM" and built.plan[0].measured_gbps > 0
    assert {v.verdict for v in built.verdicts} >= {"PASS", "SKIP"}
    assert built.comparison_counts() == {"missing": 10, "same": 2, "new": 38}


def test_a_gpu_host_s_report_names_each_gpu_question_its_runs_leave_open():
    quick, kv = docs()
    for doc in (quick, kv):
        doc["host"]["facts"]["gpus"] = [{"name": "NVIDIA H200", "uuid": None}]
    built = content.build([quick, kv])
    assert built.no_gpu is None
    assert len(built.missing) == 4 and all(why.startswith("no ") for _, why in built.missing)


def test_the_report_opens_with_its_verdict(built):
    html = render.html(built)
    assert html.index("<h2>Verdict") < html.index("<h2>Host")
    # SKIP 15: the 9 rules this CPU host cannot judge and the 6 GPU health checks (no GPU case ran), as accept says
    assert "PASS 4</span> · <span class=\"\">FAIL 0</span> · <span class=\"skip\">SKIP 15" in html
    assert "10 missing" in html and "GPU paths were not measured" in html
    no_baseline = render.html(content.build(docs()))
    assert "kvbench tag RUN baseline" in no_baseline


def test_a_report_across_a_driver_upgrade_compares_and_says_what_changed():
    quick, kv = docs()
    newer = json.loads(json.dumps(quick))
    newer["run"]["id"], newer["run"]["context_id"] = 7, "f" * 64
    quick["context"] = {"id": quick["run"]["context_id"], "facts": {"nvidia_driver": "570.86", "numpy": "2.1"}}
    newer["context"] = {"id": "f" * 64, "facts": {"nvidia_driver": "580.65", "numpy": "2.1"}}
    built = content.build([newer], baseline=quick)
    assert built.baseline_differences == ["nvidia_driver: 570.86 → 580.65"]
    assert built.comparisons and "nvidia_driver: 570.86 → 580.65" in render.html(built)


def test_html_is_self_contained(built):
    html = render.html(built)
    images = re.findall(r'<img alt="[^"]+" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == len(built.figures) == 4  # and the history of the case both runs measured
    assert built.figures[-1].question == "Has kv.restore held its level on this host, run after run?"
    assert built.figures[0].question.startswith("Does each acceptance rule pass")  # the verdict's figure comes first
    assert "http://" not in html and "https://" not in html  # nothing to fetch
    for section in ("Verdict", "Host", "Figures", "Per-fragment cost", "Restore or recompute 8192 tokens", "Acceptance", "Regressions"):
        assert f"<h2>{section}" in html


def test_markdown_has_the_tables(built):
    md = render.markdown(built)
    assert "| rule | case | verdict |" in md and "## Regressions vs baseline run" in md
    assert "| median ± |" in md  # the precision each result reached (docs/measurement.md)
    assert "&#39;" not in md  # no HTML escaping in Markdown


def test_the_kv_figure_plots_each_strategy_as_a_fraction_of_the_contiguous_copy_per_model():
    _, kv = docs()
    frame = plots.kv_ratio_frame(kv["results"])
    assert set(frame["strategy"]) == {"host"} and set(frame["model"]) == {"Llama-3.1-70B", "DeepSeek-V3"}
    assert ((frame["p10"] <= frame["ratio"]) & (frame["ratio"] <= frame["p90"])).all()
    fig = plots.kv_strategies(kv["results"])
    ratio_row, rate_row = fig.axes[:2], fig.axes[2:]  # a column per model: the ratio above, absolute GB/s below
    assert [ax.get_title() for ax in ratio_row] == ["DeepSeek-V3", "Llama-3.1-70B"]
    labels = [t.get_text() for t in rate_row[0].get_xticklabels()]
    assert all(label.endswith("iB") or label.endswith("B") for label in labels)  # sizes as the tables write them
    assert len(ratio_row[0].collections) >= 1  # the p10–p90 band
    assert "GB/s" in rate_row[0].get_ylabel() and rate_row[0].get_ylim()[0] == 0


def test_the_kv_figure_flags_a_strategy_faster_than_one_contiguous_copy():
    """Issue 39: a 1.25x "faster than contiguous" point was drawn without a word; the contiguous copy of
    the same bytes is the ceiling, so such a point is ringed and named under the figure."""
    _, kv = docs()
    frame = plots.kv_ratio_frame(kv["results"])
    above = int((frame["ratio"] > plots.ABOVE_CEILING).sum())
    assert above > 0  # the stored run has such points (noise on a busy VM)
    fig = plots.kv_strategies(kv["results"])
    notes = [t.get_text() for t in fig.texts if "ringed red" in t.get_text()]
    assert len(notes) == 1 and " ".join(notes[0].split()).startswith(f"{above} points ringed red")


def test_the_kv_figure_shows_the_ratio_each_case_measured_not_two_medians_taken_apart():
    """Issue 24: a host strategy drawn at 1.9x one contiguous copy because the contiguous case was
    timed while a neighbour ran. The strategy's own paired ratio (0.93) is what the figure shows;
    a result without one is drawn from the medians and labelled unpaired."""
    from kvbench.benches import get_bench

    def r(strategy, gbps, block_tokens, paired=None):
        params = get_bench("kv.restore").canonical_params({"model": "Llama-3.1-70B", "tokens": 1024,
                                                           "block_tokens": block_tokens, "strategy": strategy})
        return {"bench": "kv.restore", "params": params, "status": "ok", "metadata": {"paired": paired} if paired else {},
                "gbps": {"median": gbps, "p10": gbps, "p90": gbps}}

    paired = {"against": {"strategy": "contiguous"}, "median": 0.93, "p10": 0.91, "p90": 0.95, "pairs": 9}
    results = [r("host", 9.5, 16, paired), r("contiguous", 5.0, 16), r("host", 9.0, 32), r("contiguous", 10.0, 32)]
    frame = plots.kv_ratio_frame(results).set_index("block_tokens")
    assert frame.loc[16, "ratio"] == 0.93 and frame.loc[16, "paired"]
    assert (frame.loc[16, "p10"], frame.loc[16, "p90"]) == (0.91, 0.95)
    assert frame.loc[32, "ratio"] == pytest.approx(0.9) and not frame.loc[32, "paired"]
    fig = plots.kv_strategies(results)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("unpaired" in label for label in labels)


def test_history_draws_each_case_with_its_levels():
    from datetime import UTC, datetime, timedelta

    from kvbench.analyze.regress.history import segments

    series = [{"run_id": i, "started_at": datetime(2026, 11, 1, tzinfo=UTC) + timedelta(days=i), "gbps_median": v,
               "params": {"size": 1 << 20}, "case_hash": "c"} for i, v in enumerate([10, 10.1, 9.9, 7, 7.1, 6.9])]
    fig = history_plot.history_figure("dram.copy", [(series, segments([r["gbps_median"] for r in series]))])
    ax = fig.axes[0]
    from matplotlib.collections import LineCollection

    assert len([line for line in ax.lines if not line.get_label().startswith("_")]) == 1  # the case's runs
    assert len([c for c in ax.collections if isinstance(c, LineCollection)]) == 2  # two levels, both drawn
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == [f"run {i}" for i in range(6)]  # x: runs
    assert ax.get_ylim()[0] == 0


def test_single_figure_for_a_slide(tmp_path):
    quick = docs()[0]
    png = plots.figure_bytes(plots.bandwidth_vs_size(quick["results"], "dram.copy"), "png")
    svg = plots.figure_bytes(plots.bandwidth_vs_size(quick["results"], "dram.copy"), "svg")
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert b"<svg" in svg[:1000] and len(svg) > 10_000
    assert plots.bandwidth_vs_size(quick["results"], "hbm.read") is None


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]


def test_the_page_loads_in_chromium_with_every_image(built, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    page = tmp_path / "report.html"
    page.write_text(render.html(built))
    common = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,2400"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f'data-images="{len(built.figures)}"' in dom.stdout and 'data-broken-images="0"' in dom.stdout
    console_errors = [line for line in dom.stderr.splitlines() if "CONSOLE" in line and ("rror" in line or "Uncaught" in line)]
    assert console_errors == []
    shot = tmp_path / "report.png"
    subprocess.run([*common, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_two_hop_restores_and_copies_under_load_get_their_own_tables():
    quick, _ = docs()
    staged = {**quick["results"][0], "bench": "kv.restore", "params": {"src": "file", "via": "pageable"},
              "metadata": {"legs": {"read_s": 0.15, "scatter_s": 0.04}, "overlap": 1.0}}
    loaded = {**quick["results"][0], "bench": "pcie.h2d", "params": {"memory": "pinned", "engine": "ce", "size": 1 << 28,
                                                                  "gpu": 0, "gpus": "one", "load": "gemm"},
              "metadata": {"load": {"kind": "gemm", "kernel_alone_ms": 0.3, "kernel_under_load_ms": 0.36,
                                    "kernel_slowdown": 1.2, "launches": 400}}}
    html = render.html(content.build([{**quick, "results": [staged, loaded]}]))
    assert "Two-hop restores" in html and "100%" in html
    assert "Copies under load" in html and "1.20 x" in html
    loaded["metadata"]["paired"] = {"against": {"load": "none"}, "median": 0.71, "p10": 0.66, "p90": 0.77}
    html = render.html(content.build([{**quick, "results": [staged, loaded]}]))
    assert "0.71 x paired (p10–p90 0.66–0.77)" in html  # the copy's rate under load over alone, per pair
