"""Files named by what they hold, and help that reads as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, REPO

QUICK = str(FIXTURES / "runs" / "quick-cpu-vm.json")


def _kvbench(*args: str, cwd, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvbench", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_report_without_output_names_its_file_by_format(tmp_path):
    proc = _kvbench("report", QUICK, "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    assert (tmp_path / "report.md").read_text().startswith("# ")
    proc = _kvbench("report", QUICK, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_help_shows_no_type_for_flags_and_names_what_options_take(tmp_path):
    for args in (["run", "--help"], ["accept", "--help"], ["compare", "--help"], ["info", "--help"]):
        proc = _kvbench(*args, cwd=tmp_path, env={"COLUMNS": "100"})
        assert proc.returncode == 0, proc.stderr
        assert "<bool>" not in proc.stdout, args
        assert "FILE|-" in proc.stdout, args
    run_help = _kvbench("run", "--help", cwd=tmp_path, env={"COLUMNS": "100"}).stdout
    assert "URL" in run_help
    for python_type in ("<str>", "<list[str]>", "<int range>", "<float>", "<int>"):  # a placeholder, not a type
        assert python_type not in run_help, python_type
    assert all(name in run_help for name in ("SUITE", "KEY=VALUE", "SECONDS", "FRACTION"))
    assert "[dram] gbps and source, [[hbm]]" in " ".join(run_help.replace("│", " ").split())  # not eaten as markup


def test_help_flows_sentences_across_the_docstring_s_line_ends(tmp_path):
    top = _kvbench("--help", cwd=tmp_path, env={"COLUMNS": "250"}).stdout
    info = next(line for line in top.splitlines() if "Host facts" in line)
    assert "spec peaks of each path, and what looks wrong" in info  # was cut after "and"
    run = _kvbench("run", "--help", cwd=tmp_path, env={"COLUMNS": "250"}).stdout
    assert any("ran ok, 1 when a case failed" in line for line in run.splitlines())


def test_a_pytest_benchmark_export_is_listed_and_compared_by_pytest_benchmark(tmp_path):
    """Where docs/github-actions.md says to put it; its outliers are its own two counts."""
    import json
    import shutil

    tool = shutil.which("pytest-benchmark", path=str(Path(sys.executable).parent)) or shutil.which("pytest-benchmark")
    target = tmp_path / ".benchmarks" / "kvbench" / "0001_kvbench.json"
    target.parent.mkdir(parents=True)
    proc = _kvbench("export", QUICK, "--format", "pytest-benchmark", "-o", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for bench in json.loads(target.read_text())["benchmarks"]:
        stats = bench["stats"]
        assert stats["outliers"] == f"{stats['stddev_outliers']};{stats['iqr_outliers']}"
    if tool is None:
        return  # the test extra installs pytest-benchmark; the format check above stands without it
    listed = subprocess.run([tool, "list"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert listed.returncode == 0 and "0001_kvbench.json" in listed.stdout, listed.stderr
    compared = subprocess.run([tool, "compare", "0001"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert compared.returncode == 0 and "dram.copy" in compared.stdout, compared.stderr


def test_results_csv_is_a_time_series_over_several_runs(tmp_path):
    import csv
    import io
    import json
    from datetime import datetime

    kv = str(FIXTURES / "runs" / "kv-restore-cpu-vm.json")
    proc = _kvbench("results", QUICK, kv, "--format", "csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    docs = [json.loads(Path(p).read_text()) for p in (QUICK, kv)]
    assert len(rows) == sum(len(d["results"]) for d in docs)
    assert {r["suite"] for r in rows} == {d["run"]["suite"] for d in docs}
    for row in rows:
        assert datetime.fromisoformat(row["started_at"]).utcoffset().total_seconds() == 0  # UTC, with its zone
        assert row["host_id"] and row["hostname"] and row["run_id"]
        assert isinstance(json.loads(row["tags"]), dict)  # a JSON object: a value may hold ';' or '=' (H16)
        if row["status"] == "ok":  # a rate's p10 is its slow end, a time's p10 its short end
            assert float(row["gbps_p10"]) <= float(row["gbps_median"]) <= float(row["gbps_p90"])
            assert float(row["seconds_p10"]) <= float(row["seconds_median"]) <= float(row["seconds_p90"])
    refused = _kvbench("results", QUICK, kv, cwd=tmp_path)
    assert refused.returncode == 2 and "need --format csv" in refused.stderr


def test_piped_tables_respect_columns_and_fold_a_repeated_peak_source_into_a_footnote(tmp_path):
    proc = _kvbench("results", QUICK, cwd=tmp_path, env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    source = "DRAM peak unknown: dmidecode is not installed"  # every dram.copy row of the export says so
    assert proc.stdout.count(source) == 1 and f"(1) {source}" in proc.stdout
    assert sum("- (1) │" in line for line in lines) >= 2  # the peak's source marked beside the peak
    wide = _kvbench("results", QUICK, cwd=tmp_path, env={"COLUMNS": ""})
    assert max(len(line.rstrip()) for line in wide.stdout.splitlines()) > 100  # piped without COLUMNS: whole rows


def test_report_s_format_follows_the_file_s_name_and_a_contradiction_is_refused(tmp_path):
    # hostile trial H20: `-o x.md --format html` wrote HTML into x.md (and Markdown into y.html)
    proc = _kvbench("report", QUICK, "-o", "notes.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "notes.md").read_text().startswith("# ")  # Markdown, from the name alone
    for name, fmt in (("x.md", "html"), ("y.html", "markdown")):
        proc = _kvbench("report", QUICK, "-o", name, "--format", fmt, cwd=tmp_path)
        assert proc.returncode == 2 and f"bad --format {fmt} for -o {name}" in proc.stderr, proc.stderr
        assert not (tmp_path / name).exists()


def test_a_tag_value_holding_separators_reads_back_whole_from_the_csv():
    # hostile trial H16: `note=fast;cpu=slow` read as two tags, note=fast and cpu=slow
    import json

    from kvbench.report.table import run_csv_fields

    fields = run_csv_fields({"id": 1, "tags": {"note": 'fast;cpu=slow, "q"', "purpose": "ci"}}, None)
    assert json.loads(fields["tags"]) == {"note": 'fast;cpu=slow, "q"', "purpose": "ci"}


def test_several_runs_have_one_json_document_and_one_naming_with_the_csv(tmp_path):
    """Issue 57 item 16: `results A B --format json` is {"runs": [...]}; JSON's gbps.p10 is CSV's gbps_p10."""
    import csv
    import io
    import json

    kv = str(FIXTURES / "runs" / "kv-restore-cpu-vm.json")
    proc = _kvbench("results", QUICK, kv, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert [r["run"]["id"] for r in runs] == [json.loads(Path(p).read_text())["run"]["id"] for p in (QUICK, kv)]
    rows = list(csv.DictReader(io.StringIO(_kvbench("results", QUICK, "--format", "csv", cwd=tmp_path).stdout)))
    ok = [r for r in runs[0]["results"] if r["status"] == "ok"][0]
    row = next(r for r in rows if r["case_hash"] == ok["case"])
    for figure in ("median", "p10", "p90"):
        assert float(row[f"gbps_{figure}"]) == ok["gbps"][figure]
