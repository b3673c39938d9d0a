"""A user's peaks file (--peaks FILE / KVBENCH_PEAKS): what DMI hides in a VM (DRAM) or what
peaks.toml lacks, used for efficiency and always labelled as the user's."""

from __future__ import annotations

import pytest

from kvbench.errors import BadInput
from kvbench.hardware import peaks
from kvbench.hardware.facts import Dram


def _file(tmp_path, text: str) -> str:
    path = tmp_path / "peaks.toml"
    path.write_text(text)
    return str(path)


def test_a_user_dram_peak_stands_where_dmi_hides_the_dimms_and_says_whose_it_is(tmp_path, monkeypatch):
    hidden = Dram(modules=None, speed_mts=None, total_bytes=None, reason="dmidecode is not installed")
    assert peaks.dram_peak(hidden)[0] is None
    path = _file(tmp_path, '[dram]\ngbps = 102.4\nsource = "the VM host\'s spec sheet"\n')
    monkeypatch.setenv(peaks.PEAKS_ENV, path)
    peak, reason = peaks.dram_peak(hidden)
    assert reason is None and peak.gbps == 102.4
    assert peak.source == f"your peaks file {path}: the VM host's spec sheet"


def test_a_password_in_a_peaks_file_s_source_is_never_echoed_or_stored(tmp_path):
    # hostile trial H25: a URL pasted as the figure's origin was printed and stored with its password
    path = _file(tmp_path, '[dram]\ngbps = 100\nsource = "postgresql://kv:Zq9SECRETx@h/db"\n')
    source = peaks.user_peaks(path)["dram"]["source"]
    assert "Zq9SECRETx" not in source and source.endswith("postgresql://kv:***@h/db")


def test_user_entries_win_over_the_shipped_ones(tmp_path, monkeypatch):
    path = _file(tmp_path, '[[hbm]]\nmatch = "H200"\ngbps = 4000\nsource = "measured by the vendor for us"\n')
    monkeypatch.setenv(peaks.PEAKS_ENV, path)
    peak = peaks.hbm_spec_peak("NVIDIA H200")
    assert peak.gbps == 4000 and peak.source.startswith("your peaks file ")
    monkeypatch.delenv(peaks.PEAKS_ENV)
    assert peaks.hbm_spec_peak("NVIDIA H200").gbps == 4800


@pytest.mark.parametrize("text,message", [
    ('[dram]\ngbps = "fast"\nsource = "x"\n', "needs gbps = a number above 0"),
    ('[dram]\ngbps = 100\n', "needs source = text"),
    ('[dram]\ngbps = nan\nsource = "x"\n', "needs gbps = a number above 0"),
    ('[hdd]\ngbps = 1\n', "unknown: hdd"),
    # hostile trial H24: a peak import would refuse made kvbench's own export unreadable
    ('[dram]\ngbps = 1e9\nsource = "x"\n', r"gbps = 1000000000.0 is beyond any path's rate \(at most 1e\+06\); check its unit"),
    ('[[nic]]\nmatch = "CX-8"\nport_gbit = 1e9\nsource = "x"\n', "port_gbit = 1000000000.0 is beyond"),
])
def test_a_wrong_peaks_file_is_one_line_naming_it(tmp_path, text, message):
    with pytest.raises(BadInput, match=message):
        peaks.user_peaks(_file(tmp_path, text))


def test_run_takes_peaks_and_records_the_user_s_source(tmp_path):
    import json

    from tests.inproc import run_in_process as cli

    path = _file(tmp_path, '[dram]\ngbps = 102.4\nsource = "the VM host\'s spec sheet"\n')
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    proc = cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5", "--peaks", path, "--db", db)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(cli("results", "--format", "json", "--db", db).stdout)["results"]
    assert result["peak_gbps"] == pytest.approx(51.2) and f"your peaks file {path}" in result["peak_source"]
    bad = cli("info", "--peaks", str(tmp_path / "missing.toml"))
    assert bad.returncode == 2 and "missing.toml" in bad.stderr and "Traceback" not in bad.stderr


def test_the_results_table_says_a_peak_is_the_user_s_even_when_several_rows_share_it():
    from rich.console import Console

    from kvbench.benches.describe import describe_params
    from kvbench.report.table import results_table

    source = "DRAM 50.0 GB/s / 2 (copy reads + writes); your peaks file pk.toml: my DIMMs"
    row = {"bench": "dram.copy", "params": {"size": 1 << 20}, "status": "ok", "gbps_median": 10.0, "gbps_p10": 9.0,
           "gbps_p90": 11.0, "peak_gbps": 25.0, "peak_source": source, "efficiency": 0.4, "verified": True,
           "warnings": [], "extra": {}}
    console = Console(width=400, record=True)
    console.print(results_table([row, {**row, "params": {"size": 2 << 20}}], describe_params))
    assert "your peaks file pk.toml: my DIMMs" in console.export_text()
