"""Tables at 80, 100 and 200 columns (issue 26 item 16): ids and numbers whole, never cut or broken; a
long note a numbered footnote below the table, so a row keeps to a few lines; the width COLUMNS says
when piped."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from rich.console import Console

from kvbench.benches.describe import describe_params
from kvbench.report.analysis_tables import fleet_table, history_table
from kvbench.report.listing import listing_tables
from kvbench.report.table import comparisons_table, results_table, verdicts_table
from kvbench.units import format_gbps
from tests.conftest import FIXTURES, REPO

QUICK = FIXTURES / "runs" / "quick-cpu-vm.json"
CONTENDED = ("noisy: CV 98.3% > 5%; contended: other processes used 95% of the CPUs (1.89 of 2): python (0.18 CPU), "
             "python (0.17 CPU), python (0.17 CPU); contended: tasks were waiting for a CPU 100% of the time (PSI)")


def _lines(renderable, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return [line.rstrip() for line in console.export_text().splitlines()]


def _cells(lines: list[str]) -> list[str]:
    """Every table cell's text, line by line (a value broken over two lines shows as two pieces)."""
    return [cell.strip() for line in lines if line.startswith("│") for cell in line.strip("│").split("│")]


def _rows_lines(lines: list[str]) -> int:
    """How many lines the table's body takes."""
    return sum(1 for line in lines if line.startswith("│"))


def _result(bench: str, gbps: float, warnings: list[str], source: str = "DRAM peak unknown: dmidecode is not "
            "installed") -> dict:
    return {"bench": bench, "params": {"size": 64 << 20, "fragment": 32 << 10, "threads": 2}, "status": "ok",
            "gbps_median": gbps, "gbps_p10": gbps * 0.9, "gbps_p90": gbps * 1.1, "peak_gbps": None,
            "peak_source": source, "efficiency": None, "verified": True, "warnings": warnings, "extra": {}}


@pytest.mark.parametrize("width", [80, 100, 200])
def test_a_contended_run_s_rows_take_a_few_lines_and_keep_their_numbers_whole(width):
    rows = [_result("dram.copy", 2.8, [CONTENDED]), _result("storage.write", 1234.5, [CONTENDED.replace("98.3", "9")]),
            {**_result("kv.restore", 0, []), "status": "skipped", "reason": "no CUDA device: no NVIDIA driver here"}]
    lines = _lines(results_table(rows, describe_params, title="run 2"), width)
    assert max(map(len, lines)) <= width
    assert _rows_lines(lines) <= 4 * len(rows)  # was ~35 lines a row at 100 columns
    cells = _cells(lines)
    for value in ("dram.copy", "storage.write", "kv.restore", "2.80", "1,234", *(["2.52–3.08"] if width > 80 else [])):
        assert value in cells, value  # whole, in one cell of one line (p10–p90 left out at 80)
    text = "\n".join(lines)
    assert " ".join(text.split()).count(CONTENDED) == 1  # the note in full, once, as a footnote
    assert text.count("DRAM peak unknown") == 1  # a source three rows share: one footnote
    assert "no CUDA device: no NVIDIA driver here" in " ".join(text.split())


def test_a_narrow_terminal_leaves_out_the_optional_columns_and_says_so():
    rows = [_result("dram.copy", 2.8, [CONTENDED])]
    narrow, wide = _lines(results_table(rows, describe_params), 80), _lines(results_table(rows, describe_params), 200)
    assert "eff." in "\n".join(wide) and "median ±" in "\n".join(wide)
    assert "left out for want of width" in " ".join(narrow) and "2.80" in _cells(narrow)


@pytest.mark.parametrize("width", [80, 100, 200])
def test_compare_accept_fleet_history_and_list_keep_ids_and_numbers_whole(width):
    comparison = SimpleNamespace(bench="storage.write", params={"size": 64 << 20}, base_gbps=1234.5, new_gbps=987.65,
                                 change=-0.2, verdict="ambiguous (contended)", note=CONTENDED)
    lines = _lines(comparisons_table([comparison] * 3, "run 1 → run 2", describe_params), width)
    assert max(map(len, lines)) <= width and _rows_lines(lines) <= 4 * 3
    assert {"storage.write", "1,234", "988", "-20.0%"} <= set(_cells(lines))

    verdict = SimpleNamespace(rule="kv-fragments-vs-contiguous", case="tokens=1024: strategy=host / strategy=contiguous",
                              verdict="PASS", measured="0.96 x (unpaired)", threshold="≥ 0.8 x", why=CONTENDED)
    lines = _lines(verdicts_table([verdict] * 3, "acceptance of run 1"), width)
    assert max(map(len, lines)) <= width and _rows_lines(lines) <= (4 if width > 80 else 6) * 3
    assert {"kv-fragments-vs-contiguous", "0.96 x (unpaired)", "PASS"} <= set(_cells(lines))

    hosts = [SimpleNamespace(bench="dram.copy", params={"size": 1 << 30, "threads": 8}, hostname=f"rack07-node{n:03d}",
                             sku="2x Intel Xeon Platinum 8480+ / 2 TiB", gbps=123.4 + n, sku_median=124.0,
                             deviation=-0.0123, outlier=n == 2) for n in range(3)]
    lines = _lines(fleet_table(hosts, "fleet · sqlite:///fleet.sqlite", outliers_only=False), width)
    assert max(map(len, lines)) <= width
    assert {"rack07-node000", "rack07-node002", "123", "125", "-1.2%", "OUTLIER"} <= set(_cells(lines))

    series = [{"run_id": 1041 + n, "started_at": __import__("datetime").datetime(2026, 12, 1, 19, n),
               "gbps_median": 11.5 - n, "params": {"size": 1 << 20}} for n in range(2)]
    segment = SimpleNamespace(start=0, end=2, median=11.0)
    lines = _lines(history_table("dram.copy", series, [segment]), width)
    assert max(map(len, lines)) <= width
    assert {"1041", "1042", "2026-12-01 19:00", "11.5", "10.5"} <= set(c.removesuffix(" UTC") for c in _cells(lines))

    doc = json.loads(subprocess.run([sys.executable, "-m", "kvbench", "list", "--json", "-"], capture_output=True,
                                    text=True, timeout=300, cwd=REPO).stdout)
    for table in listing_tables(doc):
        lines = _lines(table, width)
        assert max(map(len, lines)) <= width
    ids = set(_cells(_lines(listing_tables(doc)[0], width)))
    assert {b["id"] for b in doc["benchmarks"]} <= ids


def test_results_piped_respect_columns_and_keep_ids_whole():
    for width in (80, 100):
        proc = subprocess.run([sys.executable, "-m", "kvbench", "results", str(QUICK)], capture_output=True, text=True,
                              timeout=300, cwd=REPO, env={**os.environ, "COLUMNS": str(width)})
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width
        doc = json.loads(QUICK.read_text())
        cells = _cells(lines)
        for result in doc["results"]:
            assert result["bench"] in cells and format_gbps(result["gbps"]["median"]) in cells
        assert _rows_lines(lines) <= 4 * len(doc["results"])


@pytest.mark.parametrize("width", [80, 200])
def test_a_run_with_no_results_is_an_empty_table(width):
    lines = _lines(results_table([], describe_params, title="run 1"), width)
    assert lines[0].startswith("run 1") and any("benchmark" in line for line in lines)



def test_a_folding_column_breaks_at_spaces_never_inside_a_value():
    """accept's case column at 100 columns broke block_tokens=16 into 'block_tokens=1' / '6' (hostile H21)."""
    rows = [SimpleNamespace(rule="kv-gpu-best-vs-contiguous", verdict="SKIP", measured="-", threshold="≥ 0.8 x",
                            case="model=Llama-3.1-70B block_tokens=16 src=pinned dst=device / strategy=gpu-contiguous",
                            why="not run: the suite has no such case"),
            SimpleNamespace(rule="pcie-torch-agrees", verdict="SKIP", measured="-", threshold="0.97 x – 1.03 x",
                            case="memory=pinned engine=ce gpus=one backend=torch / backend=cupy",
                            why="not run: pcie.h2d is unavailable here — no CUDA device: no NVIDIA driver on this host")]
    for width in (90, 100, 120):
        lines = _lines(verdicts_table(rows, "acceptance of run 2"), width)
        assert max(map(len, lines)) <= width
        words = {w for cell in _cells(lines) for w in cell.split()}
        assert {"model=Llama-3.1-70B", "block_tokens=16", "strategy=gpu-contiguous", "backend=torch"} <= words, width


def test_plan_and_policy_tables_keep_their_values_whole_at_100_columns():
    # hostile trial H26: "no measurement" split as "measur" / "ement", notes broken inside words
    from kvbench.report.analysis_tables import plan_table, policy_table

    tier = SimpleNamespace(tier="DRAM → DRAM", kv_bytes=327_680_000, peak_gbps=None, peak_s=None, measured_gbps=None,
                           measured_s=None, request_ms=None, strategy=None, faster=None, break_even_tokens=None,
                           note="no measurement at 14336 B fragments (sweep covered 32768–32768 B); DRAM peak "
                                "unknown: dmidecode is not installed; run 9")
    policy = SimpleNamespace(host="h", path="pinned → device", model="Llama-3.1-70B", layout="page_first → layer_first",
                             fragment_bytes=(4096, 65536), strategy="ce-batch", gbps=41.2, alpha_us=1.25,
                             beta_gbps=48.0, runs=[3, 4], tie_with=None)
    for table, whole in ((plan_table([tier], "restore 1000 tokens"), ("measurement", "0.328 GB", "dmidecode")),
                         (policy_table([policy]), ("Llama-3.1-70B", "ce-batch", "4KiB–64KiB", "page_first"))):
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(table)
        lines = console.export_text().splitlines()
        assert all(len(line) <= 100 for line in lines)
        for value in whole:
            assert any(value in line for line in lines), (value, lines)


@pytest.mark.parametrize("width", [80, 100, 200])
def test_accept_keeps_every_rule_id_and_threshold_at_any_width(width):
    """Issue 39: at 100 columns accept dropped its threshold column and kept a 36-character measured; a
    narrow terminal now stacks the case under its rule, and measured and threshold fold at spaces only."""
    rows = [SimpleNamespace(rule="kv-fragments-vs-contiguous", verdict="PASS", threshold="≥ 0.8 x", why="",
                            measured="0.85 x (paired; p10–p90 0.31–1.25)",
                            case="tokens=1024: strategy=host / strategy=contiguous"),
            SimpleNamespace(rule="multi-gpu-spread", verdict="SKIP", measured="-", why=CONTENDED,
                            threshold="all within 10% of the fastest gpu",
                            case="memory=pinned size=256MiB engine=ce backend=cupy")]
    lines = _lines(verdicts_table(rows, "acceptance of run 1"), width)
    assert max(map(len, lines)) <= width
    text = "\n".join(lines)
    assert "left out" not in text  # no column is dropped: a verdict without its threshold reads as a bare word
    words = {w for cell in _cells(lines) for w in cell.split()}
    assert {"kv-fragments-vs-contiguous", "multi-gpu-spread", "strategy=contiguous", "backend=cupy", "p10–p90",
            "0.31–1.25)", "≥", "0.8", "fastest", "gpu"} <= words, width
    assert {"kv-fragments-vs-contiguous", "multi-gpu-spread"} <= set(_cells(lines))  # ids whole, in one cell
    assert ("rule / case" in text) == (width == 80)  # stacked only where the columns side by side do not fit


@pytest.mark.parametrize("width", [80, 100])
def test_list_never_cuts_a_status_word(width):
    """Issue 39: `list` broke 'unavailable' as 'availabl' / 'e' though its words are promised whole."""
    doc = json.loads(subprocess.run([sys.executable, "-m", "kvbench", "list", "--json", "-"], capture_output=True,
                                    text=True, timeout=300, cwd=REPO).stdout)
    for table in listing_tables(doc):
        words = {w for cell in _cells(_lines(table, width)) for w in cell.split()}
        assert not {w for w in words if w in ("availabl", "unavailabl", "e", "le")}, width


def test_repeated_notes_with_other_details_are_one_footnote_naming_their_rows():
    """Issue 39: the quick run printed 12 near-identical `contended:` footnotes (36 of 68 lines)."""
    rows = [_result("dram.copy", 2.0 + n, [CONTENDED.replace("98.3", f"{10 + n}.0").replace("95%", f"{60 + n}%")])
            for n in range(12)]
    lines = _lines(results_table(rows, describe_params, title="run 2"), 120)
    under = " ".join(line for line in lines[next(i for i, line in enumerate(lines) if line.startswith("└")) + 1:])
    notes = ["(" + note.strip() for note in __import__("re").split(r"(?:^| )\((?=\d+\) )", under) if note.strip()]
    contended = [line for line in notes if line.split(" ", 1)[1].startswith("contended:")]
    noisy = [line for line in notes if line.split(" ", 1)[1].startswith("noisy:")]
    assert len(contended) == 1 and contended[0].endswith("— rows 1–12")
    assert len(noisy) == 1 and noisy[0].endswith("— rows 1–12")
    assert len(notes) <= 3  # not one a row
